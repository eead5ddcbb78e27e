"""`mcp-console call --elicit`: a value that is neither a policy nor a readable answers file is one line and exit 2,
never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.headless.runner import elicitor


@pytest.mark.parametrize("content", [None, "{bad", "[1, 2]"])
def test_an_elicit_value_that_is_no_policy_and_no_answers_file_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None) -> None:
    path = tmp_path / "answers.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(SystemExit) as stopped:
        elicitor(str(path) if content is not None else "default")
    assert stopped.value.code == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and '{"KEY": {"action": "accept"' in said
