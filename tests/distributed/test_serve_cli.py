"""`seer serve --replicas`: every user mistake is one `seer: error:` line, before Ray starts."""

from __future__ import annotations

import shutil
import socket
import sys

import pytest

pytest.importorskip("fastapi")  # the serve extra

from seer.cli import main  # noqa: E402


def _error(capsys, *argv: str) -> str:
    assert main(["serve", "--model", "builtin-v1", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("seer: error: ") and "\n" not in err and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--replicas", "0"], "--replicas: must be >= 1, got 0"),
        (["--min-replicas", "2"], "--min-replicas needs --replicas N"),
        (["--ray-address", "auto"], "--ray-address needs --replicas N"),
        (["--replicas", "2", "--min-replicas", "3"], "--min-replicas <= --replicas"),
        (["--replicas", "3", "--max-replicas", "2"], "got 3 <= 3 <= 2"),
        (["--replicas", "2", "--model", "/no/such/model"], "does not exist"),
    ],
)
def test_bad_replica_options_are_one_line(capsys, argv, says):
    assert says in _error(capsys, *argv)


def test_replicas_without_ray_names_the_extra(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if not installed
    monkeypatch.setitem(sys.modules, "ray.serve", None)
    assert 'needs the ray extra (ray is not installed): pip install -e ".[ray]"' in _error(
        capsys, "--replicas", "2"
    )


def test_a_taken_port_is_an_error_before_ray_starts(capsys):
    pytest.importorskip("ray.serve")
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = str(s.getsockname()[1])
        assert "pick another --port" in _error(capsys, "--replicas", "1", "--port", port)


def test_deployment_options_fixed_autoscaled_gpu_and_cpu():
    from seer.distributed.ray_serve import deployment_options

    fixed = deployment_options(2, 2, 2, gpu=False, max_batch=16, max_queue=None, drain_timeout=30)
    assert fixed["num_replicas"] == 2 and "autoscaling_config" not in fixed
    assert fixed["ray_actor_options"] == {"num_cpus": 1}
    assert fixed["max_ongoing_requests"] == 32  # a batch running and a batch waiting
    assert fixed["graceful_shutdown_timeout_s"] == 30
    assert "max_queued_requests" not in fixed  # no --max-queue: the proxy holds them all
    auto = deployment_options(2, 1, 4, gpu=True, max_batch=16, max_queue=4, drain_timeout=60)
    assert "num_replicas" not in auto
    scaling = {
        "min_replicas": 1,
        "max_replicas": 4,
        "initial_replicas": 2,
        "target_ongoing_requests": 8,
    }
    assert auto["autoscaling_config"] == scaling
    assert auto["ray_actor_options"] == {"num_gpus": 1}
    assert auto["max_ongoing_requests"] == 20
    assert auto["max_queued_requests"] == 4  # --max-queue: the proxy's own bounded queue
    assert auto["backpressure_config"] == {"status_code": 429}


def test_replicas_get_absolute_folders_for_the_model_and_merge_on(monkeypatch, tmp_path):
    """Ray Serve's replicas run in another working folder: a model folder given relative, and
    one that --merge-on prices as, reach them absolute."""
    pytest.importorskip("ray.serve")
    import seer.distributed.ray_serve as ray_serve
    from seer.models.loader import builtin_path

    got = {}
    monkeypatch.setattr(ray_serve, "serve", lambda model, **kw: got.update(model=model, **kw))
    folder = tmp_path / "my-model"
    shutil.copytree(builtin_path("builtin"), folder)
    monkeypatch.chdir(tmp_path)
    argv = ["serve", "--model", folder.name, "--replicas", "1"]
    assert main([*argv, "--merge-on", f"h100:{folder.name}"]) == 0
    assert got["model"] == str(folder.resolve())
    assert got["merge_on"] == f"h100:{folder.resolve()}"
    assert main([*argv, "--merge-on", "h100:llada-8b"]) == 0
    assert got["merge_on"] == "h100:llada-8b"
