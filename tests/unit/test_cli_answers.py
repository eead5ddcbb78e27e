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


FORM = {"method": "elicitation/create", "params": {"mode": "form", "message": "Your profile", "requestedSchema": {
    "type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}}}


def test_a_file_answer_without_an_action_is_not_sent_and_the_error_shows_the_shape_with_this_forms_fields(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "answers.json"
    path.write_text('{"profile": {"name": "Ada"}}')  # a person's first guess: the content alone
    answer = elicitor(str(path))
    with pytest.raises(SystemExit) as stopped:
        answer("profile", FORM)
    assert stopped.value.code == 2
    said = capsys.readouterr().err
    assert 'has no "action"' in said and '{"profile": {"action": "accept", "content": {"name": "Ada"}}}' in said


def test_a_file_answer_with_an_action_is_sent_as_written(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    path.write_text('{"profile": {"action": "accept", "content": {"name": "Ada"}}}')
    assert elicitor(str(path))("profile", FORM) == {"action": "accept", "content": {"name": "Ada"}}
