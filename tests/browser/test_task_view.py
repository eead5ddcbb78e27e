"""The task view in real Chromium (2026-07-28, the io.modelcontextprotocol/tasks extension), against the hostile
target's tasks module (tests/hostile/tools_tasks.py) as a real process: a call that became a task shows the task's
status and its polls as they come, its input request is answered through the same dialog as an MRTR round's (and goes
back with tasks/update), and another task is cancelled from its card (tasks/cancel). Every host but loopback is
aborted (the `context` fixture routes them away)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest
from playwright.sync_api import BrowserContext, Locator, Page, expect

from tests.browser.conftest import Console
from tests.browser.test_hostile_forms import connect
from tests.browser.ui import label, open_tool

pytestmark = pytest.mark.browser


def call(page: Page, tool: str, arguments: dict[str, object] | None = None) -> Locator:
    """Calls a tool from its form (its arguments through the JSON editor when given); returns the operation card."""
    item = open_tool(page, tool)
    if arguments is not None:
        item.locator("details.json-mode > summary").click()
        item.get_by_label("Arguments (JSON)", exact=True).fill(json.dumps(arguments))
        item.get_by_label("Send the JSON below instead of the form", exact=False).check()
    item.get_by_role("button", name=f"Call {tool}", exact=True).click()
    card = item.locator(".result .operation[data-op]")
    expect(card).to_have_count(1)
    return card


def task_view(card: Locator) -> Locator:
    view = card.locator("section.task-view")
    expect(view).to_be_visible()
    return view


def fact(view: Locator, name: str) -> Locator:
    """The value beside a fact of the task view (Server status, Polls so far, …)."""
    return view.locator(f'dl.task-facts dt:text-is("{name}") + dd')


def test_a_task_shows_its_status_and_polls_until_it_completes(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    page, dialogs, leaving = connect(context, console, hostile_http("tasks"))
    card = call(page, "slow_task", {"polls": 5})
    view = task_view(card)
    expect(view).to_have_attribute("data-task", re.compile(r"^task-\d+$"))
    expect(view.locator(".badge")).to_have_text(re.compile(r"^(working|completed)$"))
    expect(card).to_have_attribute("data-status", "complete")
    expect(view).to_have_attribute("data-task-status", "completed")
    expect(fact(view, "Server status")).to_have_text("completed")
    expect(fact(view, "Polls so far")).to_contain_text(re.compile(r"^5 "))
    expect(card).to_contain_text("done after 5 polls")
    view.locator("details.task-exchanges > summary").click()
    expect(view.locator("details.task-exchanges li").filter(has_text="tasks/get")).to_have_count(5)
    assert dialogs == [] and leaving == []


def test_a_tasks_input_request_is_answered_through_the_dialog(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    page, _, leaving = connect(context, console, hostile_http("tasks"))
    card = call(page, "ask_task")
    expect(card).to_have_attribute("data-status", "awaiting_input")
    expect(task_view(card)).to_have_attribute("data-task-status", "input_required")
    op = card.get_attribute("data-op")
    dialog = page.locator(f'#inbox .inbox-op[data-op="{op}"] section[role=dialog][data-key="name"]')
    expect(dialog).to_contain_text("Your name?")
    dialog.get_by_label(label("name")).fill("Grace")
    dialog.get_by_role("button", name="Accept", exact=True).click()
    expect(card).to_have_attribute("data-status", "complete")
    expect(card).to_contain_text("hello Grace")
    expect(page.locator(f'#inbox .inbox-op[data-op="{op}"]')).to_have_count(0)
    view = task_view(card)
    view.locator("details.task-exchanges > summary").click()
    expect(view.locator("details.task-exchanges li").filter(has_text="tasks/update")).to_have_count(1)
    assert leaving == []


def test_a_running_task_is_cancelled_from_its_card(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    page, _, leaving = connect(context, console, hostile_http("tasks"))
    card = call(page, "slow_task", {"polls": 100_000})
    view = task_view(card)
    expect(fact(view, "Polls so far")).to_contain_text(re.compile(r"^[1-9]"))  # it is being followed
    card.get_by_role("button", name="Cancel", exact=True).click()
    expect(card).to_have_attribute("data-status", "cancelled")
    expect(task_view(card).locator(".badge").first).to_have_text("cancelled")
    view = task_view(card)
    view.locator("details.task-exchanges > summary").click()
    expect(view.locator("details.task-exchanges li").filter(has_text="tasks/cancel")).to_have_count(1)
    assert leaving == []


def test_push_is_turned_on_in_the_task_view_and_a_pushed_end_completes_the_call(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    page, _, leaving = connect(context, console, hostile_http("tasks"))
    card = call(page, "push_task")  # polled every 5 s: only a push ends it sooner
    push = task_view(card).get_by_role("button", name="Push: listen for this task", exact=True)
    expect(push).to_have_attribute("aria-pressed", "false")
    push.click()
    expect(card).to_have_attribute("data-status", "complete", timeout=4_000)
    expect(card).to_contain_text("done, and pushed")
    expect(fact(task_view(card), "Polls so far")).to_contain_text(re.compile(r"^0 "))
    assert leaving == []


def test_an_optional_2025_tool_runs_as_a_task_when_chosen_and_the_servers_tasks_are_listed(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    page, _, leaving = connect(context, console, hostile_http("tasks2025"))
    item = open_tool(page, "optional_task")
    choice = item.get_by_label("Run as a task", exact=False)
    expect(choice).not_to_be_checked()
    item.get_by_role("button", name="Call optional_task", exact=True).click()
    card = item.locator(".result .operation[data-op]")
    expect(card).to_contain_text("done at once (a plain call)")
    expect(card.locator("section.task-view")).to_have_count(0)

    choice.check()
    item.get_by_label("Task TTL (ms", exact=False).fill("4000")
    item.get_by_role("button", name="Call optional_task", exact=True).click()
    expect(card).to_have_attribute("data-status", "complete")
    expect(task_view(card)).to_have_attribute("data-task-status", "completed")
    expect(card).to_contain_text('done as a task after 2 polls (asked {"ttl": 4000})')
    expect(fact(task_view(card), "TTL")).to_contain_text("4")

    page.get_by_role("button", name="List the server’s tasks (tasks/list)", exact=True).click()
    rows = page.get_by_role("table", name="The server's tasks").locator("tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("completed")
    expect(rows.first).to_contain_text("4000 ms")
    assert leaving == []
