"""Keep sessions that commands record during the tests out of the working tree."""

import pytest


@pytest.fixture(autouse=True)
def _sessions_in_tmp(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TORCHDOCTOR_SESSIONS", str(tmp_path_factory.mktemp("sessions")))
