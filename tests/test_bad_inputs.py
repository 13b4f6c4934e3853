"""The command-line half of the bad-input corpus (tests/corpus/bad_inputs.yaml and
more_cases.yaml, one format): every case is
one `seer: error:` line with the expected text and exit status 2, never a traceback (or, for
the warning cases, a run that succeeds with that one warning line). The HTTP half runs in
tests/serve/test_server.py against its module server."""

from __future__ import annotations

import logging

import pytest
from corpus.corpus import MORE, case_id, cases, check_one_line, prepare, substitute

from seer.cli import main

CLI = cases("cli") + cases("cli", MORE)


@pytest.mark.parametrize("case", CLI, ids=[case_id(c) for c in CLI])
def test_a_bad_command_line_is_one_line(case, tmp_path, capsys, caplog, monkeypatch):
    monkeypatch.chdir(tmp_path)
    prepare(case, tmp_path)
    argv = substitute(case["argv"], tmp=str(tmp_path))
    with caplog.at_level(logging.WARNING):
        rc = main(argv)
    check_one_line(case, rc, capsys.readouterr().err, caplog.records, tmp=str(tmp_path))


def test_the_corpus_is_well_formed():
    for case in CLI:
        assert set(case) <= {"argv", "files", "model", "json", "delete", "exit", "error", "warn"}
        assert ("error" in case) != ("warn" in case), case
    assert len(cases("cli")) >= 50 and len(cases("cli", MORE)) >= 100
