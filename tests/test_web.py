"""`reins serve`'s web page, driven in a real Chromium (Playwright) against a real uvicorn
serving `create_app` over real runs (scripted models, a real SQLite store): the token, a run
started and streamed, an approval, a question, a steer, a stop, a resume, a cap's offer, and
model and tool output that tries to run script. Each state's screenshot goes to
`test-artifacts/web/`."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from playwright.async_api import Browser, ConsoleMessage, Page, Route, async_playwright, expect

from reins import (
    Agent,
    Ask,
    AssistantMessage,
    Budgets,
    ContextSettings,
    Message,
    StopReason,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from reins.core._model import TextChunk
from reins.events import (
    AnswerRejected,
    BudgetExtended,
    ContextCompacted,
    Event,
    ModelResponded,
    Notice,
    Reflected,
    ResponseRejected,
    RunConfig,
    RunFinished,
    RunStarted,
    SubagentEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolsChanged,
)
from reins.server import RunRequest, Runs, create_app
from reins.server._runs import event_json, journaled
from reins.store import SQLiteLog
from reins.testing import FunctionModel, ScriptedModel
from reins.tools import BUILTIN_TOOLS

from .helpers import call, reply
from .test_server import Gate

TOKEN = "s3cret-token"
CHROMIUM = shutil.which("chromium")
SHOTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "web"
# Without the background-networking flags Debian's Chromium hangs on refused connections.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (make system)")
expect.set_options(timeout=15_000)


def served(
    workspace: Path,
    log: SQLiteLog,
    model: Any,
    requests: list[RunRequest] | None = None,
    window: int | None = None,
) -> FastAPI:
    """The app as `reins serve` makes it: runs whose approvals and questions pause, answered
    by resuming them. `requests` collects what the page asked for."""

    def make_agent(request: RunRequest) -> Agent:
        if requests is not None:
            requests.append(request)
        return Agent(
            model=model,
            tools=BUILTIN_TOOLS,
            workspace=workspace,
            log=log,
            budgets=Budgets(
                max_steps=request.max_steps or 10,
                time_budget=0.5 if "slowly" in request.goal else None,
            ),
            approval="pause",
            ask=Ask(answer="pause"),
            context=ContextSettings(window=window),
        )

    return create_app(Runs(log, make_agent), TOKEN)


@asynccontextmanager
async def serving(app: FastAPI) -> AsyncIterator[str]:
    """The app on a loopback port; its base URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        assert not task.done(), "the server did not start"
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        await chromium.close()


@asynccontextmanager
async def page_at(browser: Browser, url: str, allowed: str = "") -> AsyncIterator[Page]:
    """A page at `url`; at the end, no script error, no policy refused, no Trusted Types
    violation happened in it (but messages that begin with `allowed`, if given)."""
    page = await browser.new_page(viewport={"width": 1200, "height": 800})
    errors: list[str] = []
    ignored = ("Failed to load resource", *((allowed,) if allowed else ()))
    page.on("pageerror", lambda error: errors.append(str(error)))

    def said(message: ConsoleMessage) -> None:
        if message.type == "error" and not message.text.startswith(ignored):
            errors.append(message.text)

    page.on("console", said)
    await page.goto(url)
    yield page
    assert errors == []
    await page.close()


async def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=SHOTS / f"{name}.png")


async def start(page: Page, goal: str, max_steps: int | None = None, mode: str = "") -> None:
    await page.locator("#new-run").click()
    await page.locator("#goal").fill(goal)
    await page.locator(".options").evaluate("(options) => (options.open = true)")
    await page.locator("input[name=max_steps]").fill("" if max_steps is None else str(max_steps))
    await page.locator("select[name=mode]").select_option(mode)
    await page.locator("#start").click()


def ending(page: Page, reason: str) -> Any:
    return page.locator(f".run:last-child .finish[data-reason={reason}]").last


class Held(ScriptedModel):
    """A scripted model whose first reply stops streaming after its first two words, until
    the test sets `release`."""

    def __init__(self, replies: Sequence[Any]) -> None:
        super().__init__(replies)
        self.release = asyncio.Event()

    async def stream(self, *args: Any) -> AsyncIterator[Any]:
        words = 0
        async for item in super().stream(*args):
            yield item
            if isinstance(item, TextChunk) and not self.release.is_set():
                words += 1
                if words == 2:
                    await self.release.wait()


async def test_the_page_is_served_with_a_strict_policy_and_no_token(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    app = served(workspace, sqlite_log, ScriptedModel([]))
    async with serving(app) as base, httpx.AsyncClient(base_url=base) as client:
        page = await client.get("/")
        script = await client.get("/web/app.js")
        sanitizer = await client.get("/web/vendor/purify.es.js")
        outside = await client.get("/web/%2e%2e/_web.py")
        docs = await client.get("/docs")
        schema = (await client.get("/openapi.json")).json()
        api = await client.get("/api/sessions")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'self'" in policy
    assert "script-src 'self'" in policy
    assert "unsafe" not in policy
    assert "require-trusted-types-for 'script'" in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    scripts = re.findall(r"<script[^>]*>", page.text)
    assert scripts == ['<script type="module" src="/web/app.js">']  # none inline
    assert script.status_code == sanitizer.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
    assert script.headers["content-security-policy"] == policy
    assert outside.status_code == 404
    assert docs.status_code == 200
    assert "/" not in schema["paths"]
    assert "/api/runs" in schema["paths"]
    assert api.status_code == 401


async def test_the_token_comes_from_a_form_and_a_refused_one_asks_again(
    browser: Browser, workspace: Path, sqlite_log: SQLiteLog
) -> None:
    app = served(workspace, sqlite_log, ScriptedModel([]))
    async with serving(app) as base, page_at(browser, base + "/") as page:
        dialog = page.locator("#token-dialog")
        await expect(dialog).to_be_visible()
        await shot(page, "01-token-form")
        await page.locator("#token-input").fill("wrong")
        await page.locator("#token-dialog button[type=submit]").click()
        await expect(dialog).to_be_visible()  # the 401 brought it back
        assert await page.evaluate("sessionStorage.getItem('reins-token')") is None
        await page.locator("#token-input").fill(TOKEN)
        await page.locator("#token-dialog button[type=submit]").click()
        await expect(dialog).to_be_hidden()
        await expect(page.locator("#start-title")).to_have_text("New run")
        assert await page.evaluate("sessionStorage.getItem('reins-token')") == TOKEN
        await page.locator("#forget").click()
        await expect(dialog).to_be_visible()


async def test_a_run_streams_and_goes_on_when_its_command_is_approved(
    browser: Browser, workspace: Path, sqlite_log: SQLiteLog
) -> None:
    model = Held(
        [
            reply("Looking around **first**.", call("run_command", "c1", command="touch made.txt")),
            reply("", call("final_answer", "f1", answer="made.txt is *there*")),
        ]
    )
    requests: list[RunRequest] = []
    app = served(workspace, sqlite_log, model, requests, window=8000)
    async with serving(app) as base, page_at(browser, f"{base}/#token={TOKEN}") as page:
        assert page.url == base + "/"  # the token left the address bar
        assert await page.evaluate("sessionStorage.getItem('reins-token')") == TOKEN
        await page.locator("#new-run").click()
        await page.locator("#goal").fill("touch made.txt")
        await page.locator(".options summary").click()
        await page.locator("select[name=mode]").select_option("explore")
        await shot(page, "02-new-run-form")
        await page.locator("#start").click()

        streaming = page.locator(".assistant.streaming")
        await expect(streaming).to_have_text("Looking around")
        await expect(page.locator("#working")).to_be_visible()  # steer and stop, while it works
        await shot(page, "03-streaming")
        model.release.set()

        card = page.locator(".card.approval")
        await expect(card).to_be_visible()
        await expect(card.locator("dd pre")).to_have_text("touch made.txt")
        await expect(page.locator("#meter")).to_contain_text("waiting")
        await expect(page.locator(".assistant strong")).to_have_text("first")  # markdown
        await shot(page, "04-approval")
        assert not (workspace / "made.txt").exists()
        await card.locator("button.approve").click()

        await expect(ending(page, "end_turn").locator(".answer em")).to_have_text("there")
        await expect(card.locator(".settled-text")).to_have_text("Approved by user")
        await expect(page.locator(".call[data-call=c1] .output summary")).to_contain_text("output")
        await expect(page.locator("#meter")).to_contain_text("finished")
        await expect(page.locator("#meter")).to_contain_text("context")
        await expect(page.locator(".session .goal")).to_have_text(["touch made.txt"])
        await expect(page.locator("#start-title")).to_have_text("Next turn in this session")
        await shot(page, "05-approved-and-finished")
    assert (workspace / "made.txt").exists()
    assert [(r.goal, r.mode, r.model, r.workspace, r.max_steps) for r in requests[:1]] == [
        ("touch made.txt", "explore", None, None, None)
    ]


async def test_a_question_is_answered_with_a_choice_then_in_words(
    browser: Browser, workspace: Path, sqlite_log: SQLiteLog
) -> None:
    def model(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Any:
        turn = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
        results = [m for m in messages[turn:] if m.role == "tool"]
        if not results:
            question = "Overwrite report.md?"
            choices = ["yes", "no"]
            asked = call("ask_user", f"q{turn}", question=question, choices=choices, default="no")
            return reply("", asked)
        return reply("", call("final_answer", f"f{turn}", answer=f"told: {results[-1].content}"))

    app = served(workspace, sqlite_log, FunctionModel(model))
    async with serving(app) as base, page_at(browser, f"{base}/#token={TOKEN}") as page:
        await start(page, "write the report")
        card = page.locator(".card.question")
        await expect(card.locator(".question-text")).to_have_text("Overwrite report.md?")
        await expect(card.locator("button.choice")).to_have_text(["yes", "no"])
        await expect(card.locator("input[name=answer]")).to_be_visible()
        await shot(page, "06-question")
        await card.locator("button.choice", has_text="yes").click()
        await expect(ending(page, "end_turn")).to_contain_text("told:")
        await expect(ending(page, "end_turn")).to_contain_text("yes")
        await expect(card.locator(".settled-text")).to_have_text("Answered: yes")

        await page.locator("#goal").fill("and the summary?")  # the session's next turn
        await page.locator("#start").click()
        second = page.locator(".run").nth(1).locator(".card.question")
        await second.locator("input[name=answer]").fill("only if it is stale")
        await second.locator("button.send").click()
        await expect(ending(page, "end_turn")).to_contain_text("only if it is stale")
        await expect(page.locator(".session .meta")).to_contain_text("2 runs")
        await shot(page, "07-question-answered")


async def test_a_run_is_steered_while_it_works(
    browser: Browser, workspace: Path, sqlite_log: SQLiteLog
) -> None:
    gate = Gate()
    app = served(workspace, sqlite_log, FunctionModel(gate))
    async with serving(app) as base, page_at(browser, f"{base}/#token={TOKEN}") as page:
        await start(page, "look around")
        await gate.waiting.wait()
        await page.locator("#steer-input").fill("say pineapple")
        await page.locator("#steer").click()
        await expect(page.locator("#steer-input")).to_have_value("")  # sent
        gate.open.set()
        await expect(page.locator(".user.steer .said")).to_have_text("say pineapple")
        await expect(ending(page, "end_turn")).to_contain_text("pineapple")
        await shot(page, "08-steered")


async def test_a_stopped_run_is_resumed(
    browser: Browser, workspace: Path, sqlite_log: SQLiteLog
) -> None:
    gate = Gate()
    app = served(workspace, sqlite_log, FunctionModel(gate))
    async with serving(app) as base, page_at(browser, f"{base}/#token={TOKEN}") as page:
        await start(page, "look around")
        await gate.waiting.wait()
        await page.locator("#stop").click()
        await expect(ending(page, "cancelled")).to_be_visible()
        await expect(page.locator("#resume")).to_be_visible()
        await expect(page.locator("#working")).to_be_hidden()
        await shot(page, "09-stopped")
        await page.locator("#resume").click()
        await expect(page.locator(".divider")).to_contain_text("resumed")
        await expect(ending(page, "end_turn")).to_contain_text("told: []")
        await expect(page.locator("#resume")).to_be_hidden()
        await shot(page, "10-resumed")
    assert gate.calls == 2


async def test_a_run_at_a_cap_is_offered_more(
    browser: Browser, workspace: Path, sqlite_log: SQLiteLog
) -> None:
    async def model(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Any:
        goal = next(m.content for m in messages if isinstance(m, UserMessage))
        if not any(m.role == "tool" for m in messages):
            if "slowly" in goal:
                await asyncio.sleep(0.8)  # past the 0.5 s budget
            return reply("", call("list_files", "l1", path="."))
        return reply("", call("final_answer", "f1", answer="listed"))

    app = served(workspace, sqlite_log, FunctionModel(model))
    async with serving(app) as base, page_at(browser, f"{base}/#token={TOKEN}") as page:
        await start(page, "list the files", max_steps=1)
        await expect(ending(page, "max_steps")).to_be_visible()
        await expect(page.locator("#more-steps")).to_have_text("+10 steps")
        await expect(page.locator("#more-time")).to_be_hidden()
        await shot(page, "11-step-cap-offer")
        await page.locator("#more-steps").click()
        await expect(ending(page, "end_turn")).to_contain_text("listed")
        await expect(page.locator("#meter")).to_contain_text("step 2 of 11")
        await expect(page.locator("#offer")).to_be_hidden()

        await start(page, "list the files slowly")
        await expect(ending(page, "time_budget")).to_be_visible()
        await expect(page.locator("#more-time")).to_have_text("+5 min")
        await shot(page, "12-time-cap-offer")
        await page.locator("#more-time").click()
        await expect(ending(page, "end_turn")).to_contain_text("listed")
        await expect(page.locator(".divider")).to_contain_text("5 min")


async def test_a_cut_stream_is_read_again_from_its_last_event(
    browser: Browser, workspace: Path, sqlite_log: SQLiteLog
) -> None:
    """The first read of the stream fails, the second ends after the run's first event (and
    half of the next, as a dropped connection would end it): the page reads on with
    `Last-Event-ID`, and draws nothing twice."""
    gate = Gate()
    app = served(workspace, sqlite_log, FunctionModel(gate))
    asked: list[dict[str, str]] = []

    async def cut_once(route: Route) -> None:
        asked.append(route.request.headers)
        if len(asked) == 1:
            await route.abort()
            return
        if len(asked) > 2:
            await route.continue_()
            return
        first = (await sqlite_log.events(run_id))[0]
        body = f'id: {first.seq}\ndata: {first.model_dump_json()}\n\ndata: {{"kind": "te'
        await route.fulfill(status=200, content_type="text/event-stream", body=body)

    async with serving(app) as base, page_at(browser, f"{base}/#token={TOKEN}") as page:
        async with httpx.AsyncClient(
            base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}
        ) as client:
            started = (await client.post("/api/runs", json={"goal": "look around"})).json()
        run_id = started["run_id"]
        await gate.waiting.wait()
        await page.route("**/api/runs/*/events", cut_once)
        await page.locator("#refresh").click()
        await page.locator(".session").first.click()
        await expect(page.locator("#working")).to_be_visible()
        gate.open.set()
        await expect(ending(page, "end_turn")).to_contain_text("told: []")
        await expect(page.locator(".user")).to_have_count(1)
        await expect(page.locator(".call")).to_have_count(1)
        await expect(page.locator(".finish")).to_have_count(1)
    assert [headers.get("last-event-id") for headers in asked] == [None, None, "1"]


async def test_every_kind_of_event_is_drawn(
    browser: Browser, workspace: Path, sqlite_log: SQLiteLog
) -> None:
    """The events a scripted run seldom makes (guards' rejections, a reflection, a compaction,
    a subagent's calls, a budget extended), drawn by the page's own module as the stream
    would bring them."""
    head: dict[str, Any] = {"session_id": "s1", "run_id": "r1"}
    task = call("task", "t1", goal="count the files")
    inner = call("list_files", "i1", path=".")
    config = RunConfig(
        model="scripted",
        workspace=str(workspace),
        max_steps=5,
        context=ContextSettings(window=2000),
    )
    usage = Usage(input_tokens=500, output_tokens=20, requests=1)
    kinds: list[Event | SubagentEvent] = [
        RunStarted(**head, seq=1, goal="count", config=config, messages=()),
        ThinkingDelta(**head, seq=2, step=1, text="hmm"),
        TextDelta(**head, seq=2, step=1, text="Plan: "),
        ModelResponded(
            **head,
            seq=2,
            step=1,
            message=AssistantMessage(text="Plan: **go**", thinking="hmm", tool_calls=(task,)),
            usage=usage,
            finish="tool_use",
            model="scripted",
            cost=0.0125,
        ),
        ToolCallStarted(**head, seq=3, step=1, call=task),
        SubagentEvent(
            ("t1",), ToolCallStarted(session_id="s2", run_id="r2", seq=3, step=1, call=inner)
        ),
        ToolCallFinished(
            **head,
            seq=4,
            step=1,
            result=ToolResultMessage(call_id="t1", name="task", content="12 files"),
            duration_ms=40,
        ),
        ResponseRejected(**head, seq=5, step=2, observation="<tool_call> leaked", source="Markup"),
        AnswerRejected(**head, seq=6, step=2, observation="pytest failed", source="Checks"),
        Notice(**head, seq=7, text="4 of 5 steps used", source="BudgetNotices", level="warning"),
        Reflected(
            **head,
            seq=8,
            step=2,
            assessment="partial",
            reasoning="one more look",
            next_action="continue",
            usage=usage,
            model="scripted",
            source="Reflective",
        ),
        ContextCompacted(
            **head,
            seq=9,
            prefix=(),
            cut=2,
            method="summary",
            tokens_before=1800,
            tokens_after=400,
            messages_before=12,
            messages_after=4,
        ),
        ToolsChanged(**head, seq=10, added=("web_search",), removed=("grep",)),
        BudgetExtended(**head, seq=11, source="StepBudget", choice="+20 steps", max_steps=25),
        RunFinished(**head, seq=12, stop_reason=StopReason.TOKEN_BUDGET, detail="1,040 tokens"),
    ]
    fed = [
        [json.loads(event_json(event)), None if not journaled(event) else str(event.seq)]
        for event in kinds
    ]
    app = served(workspace, sqlite_log, ScriptedModel([]))
    async with serving(app) as base, page_at(browser, f"{base}/#token={TOKEN}") as page:
        folded = await page.evaluate(
            """async (events) => {
                const { RunView } = await import("/web/transcript.js");
                const run = new RunView("r1", {}, () => {});
                document.querySelector("#transcript").append(run.el);
                for (const [event, id] of events) run.apply(event, id);
                const { steps, usage, cost, maxSteps, window, context } = run;
                return { steps, usage, cost, maxSteps, window, context };
            }""",
            fed,
        )
        await expect(page.locator(".assistant strong")).to_have_text("go")
        await expect(page.locator(".thinking")).to_have_count(1)
        await expect(page.locator(".call[data-call=t1] .subagent li")).to_contain_text("list_files")
        await expect(page.locator(".guard pre")).to_have_text(
            ["<tool_call> leaked", "pytest failed"]
        )
        await expect(page.locator(".notice.warning")).to_contain_text("4 of 5 steps used")
        await expect(page.locator(".notice.info")).to_contain_text(
            ["reflection: partial", "1800 → 400", "+web_search −grep", "+20 steps"]
        )
        await expect(page.locator(".finish[data-reason=token_budget]")).to_contain_text("1,040")
        await shot(page, "14-every-kind-of-event")
    assert folded == {
        "steps": 1,
        "usage": {"input": 1000, "output": 40},
        "cost": 0.0125,
        "maxSteps": 25,
        "window": 2000,
        "context": 500,
    }


XSS = "<img src=x onerror=window.__xss=1>"


async def test_model_and_tool_output_cannot_run_script(
    browser: Browser, workspace: Path, sqlite_log: SQLiteLog
) -> None:
    (workspace / "evil.html").write_text(XSS + "\n")
    link = "[x](javascript:window.__xss=1) and [y](JaVaScRiPt:window.__xss=1)"
    markup = '<img src="x" onerror="window.__xss=1"><script>window.__xss=1</script>'
    answer = '<a href="javascript:window.__xss=1">z</a> <svg onload="window.__xss=1"></svg>'
    model = ScriptedModel(
        [
            reply(f"{link} {markup}", call("read_file", "r1", path="evil.html")),
            reply("", call("final_answer", "f1", answer=answer)),
        ]
    )
    app = served(workspace, sqlite_log, model)
    # Chromium reports the policy's refusal of an inline handler as soon as the sanitizer
    # parses the markup in its inert document (where no handler ever runs); nothing else.
    refused = "Executing inline event handler violates the following Content Security Policy"
    async with (
        serving(app) as base,
        page_at(browser, f"{base}/#token={TOKEN}", allowed=refused) as page,
    ):
        await start(page, f"read evil.html {XSS}")
        await expect(ending(page, "end_turn")).to_be_visible()
        await page.locator(".call[data-call=r1] .output summary").click()
        await shot(page, "13-xss-inert")
        await _inert(page)
        await page.reload()  # the same run drawn again from its log, by opening its session
        await page.locator(".session").first.click()
        await expect(ending(page, "end_turn")).to_be_visible()
        await _inert(page)


async def _inert(page: Page) -> None:
    await expect(page.locator(".call[data-call=r1] .output pre")).to_contain_text(XSS)
    await expect(page.locator(".user .said").first).to_have_text(f"read evil.html {XSS}")
    await expect(page.locator(".session .goal")).to_have_text([f"read evil.html {XSS}"])
    await expect(page.locator(".assistant a")).to_have_text(["x", "y"])
    found = await page.evaluate(
        """() => ({
            xss: typeof window.__xss,
            hrefs: [...document.querySelectorAll("[href]")].map((el) => el.getAttribute("href")),
            handlers: [...document.querySelectorAll("*")].flatMap((el) =>
                [...el.attributes].filter((a) => a.name.startsWith("on")).map((a) => a.name)),
            scripts: document.scripts.length,
            images: document.querySelectorAll("img").length,
        })"""
    )
    assert found["xss"] == "undefined"
    assert not [h for h in found["hrefs"] if "javascript" in h.lower()]
    assert found["handlers"] == []
    assert found["scripts"] == 1  # the page's own module
    assert found["images"] == 1  # the model's <img>, sanitized: no handler
