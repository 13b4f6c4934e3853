"""The command-line half of the bad-input corpus (tests/corpus/bad_inputs.yaml and
more_cases.yaml, one format): every case is
one `seer: error:` line with the expected text and exit status 2, never a traceback (or, for
the warning cases, a run that succeeds with that one warning line). The HTTP half runs in
tests/serve/test_server.py against its module server."""

from __future__ import annotations

import logging

import pytest
from corpus.corpus import MORE, case_id, cases, prepare, substitute

from seer.cli import main

CLI = cases("cli") + cases("cli", MORE)


@pytest.mark.parametrize("case", CLI, ids=[case_id(c) for c in CLI])
def test_a_bad_command_line_is_one_line(case, tmp_path, capsys, caplog, monkeypatch):
    monkeypatch.chdir(tmp_path)
    prepare(case, tmp_path)
    argv = substitute(case["argv"], tmp=str(tmp_path))
    with caplog.at_level(logging.WARNING):
        rc = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    assert rc == case.get("exit", 2), err
    if "warn" in case:
        said = [r.getMessage() for r in caplog.records if case["warn"] in r.getMessage()]
        assert len(said) == 1 and "\n" not in said[0], [r.getMessage() for r in caplog.records]
        return
    lines = [line for line in err.splitlines() if line.startswith("seer: error: ")]
    assert len(lines) == 1 and err.endswith(lines[0] + "\n"), err  # one line, the last
    assert substitute(case["error"], tmp=str(tmp_path)) in lines[0], lines[0]


def test_the_corpus_is_well_formed():
    for case in CLI:
        assert set(case) <= {"argv", "files", "model", "json", "delete", "exit", "error", "warn"}
        assert ("error" in case) != ("warn" in case), case
    assert len(cases("cli")) >= 50 and len(cases("cli", MORE)) >= 100
