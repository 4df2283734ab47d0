"""Drafted tokens for the embedded model: what an action must say next, and lookups."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from reins import ModelSettings, SystemMessage, UserMessage
from reins.models import LocalModel
from reins.models._drafts import Shape, lookup
from reins.models._json_actions import action_schema
from reins.tools import edit_file, final_answer, read_file, write_file

TOOLS = [read_file.spec, write_file.spec, edit_file.spec, final_answer.spec]
SHAPE = Shape(action_schema(TOOLS, max_chars=1024))
START = '{"thought": "x", "name": '


@pytest.mark.parametrize(
    ("reply", "follows"),
    [
        ("{", '"thought": "'),
        ('{"tho', 'ught": "'),
        ('{"thought": "I read it."', ', "name": "'),
        ('{"thought": "I read it.",', ' "name": "'),  # a token that closed and went on
        ('{"thought": "a \\"quoted\\" word",', ' "name": "'),  # escapes are not the end
        (START + '"re', 'ad_file", "arguments": {"path": "'),  # the one tool it can be
        (START + '"write_file"', ', "arguments": {"path": "'),
        (START + '"write_file", "arguments": {"path": "a.txt"', ', "content": "'),
        (START + '"final_answer", "arguments": {"answer": "4"', "}}"),
        (START + '"write_file", "arguments": {"path": "a", "content": "b", "ap', 'pend": '),
    ],
)
def test_what_an_action_must_say_next_is_drafted(reply: str, follows: str) -> None:
    assert SHAPE.next_text(reply) == follows


@pytest.mark.parametrize(
    "reply",
    [
        '{"thought": "I will read the',  # a free value
        START + '"',  # which tool: the model's choice
        START + '"write_file", "arguments": {"path": "a", "content": "b"',  # optional `append`
        START + '"read_file", "arguments": {"path": "a.t',
        START + '"thought", "arguments": {"path": "a"',  # not a tool: nothing known
        '{"thought": "x",  ',  # not the spacing drafted
    ],
)
def test_nothing_is_drafted_where_the_model_chooses(reply: str) -> None:
    assert SHAPE.next_text(reply) == ""


def test_a_whole_action_drafts_nothing_more() -> None:
    assert SHAPE.next_text(START + '"final_answer", "arguments": {"answer": "4"}}') is None


def test_a_held_argument_is_drafted_whole() -> None:
    held = Shape(
        action_schema(TOOLS, max_chars=1024, arguments={"edit_file": {"path": {"const": "c.json"}}})
    )
    assert held.next_text(START + '"edit_') == 'file", "arguments": {"path": "c.json", "old": "'


def test_a_lookup_drafts_what_followed_the_last_tokens_most_recently() -> None:
    tokens = np.array([1, 2, 3, 4, 5, 9, 1, 2, 3, 7, 8, 6, 0, 1, 2, 3])
    assert lookup(tokens) == [7, 8, 6]  # the later of two occurrences
    assert lookup(np.array([1, 2, 3, 4, 1, 2])) == []  # two tokens are too few to go on


GOAL = (
    "Create notes.txt containing exactly this text: The quick brown fox jumps over the lazy "
    "dog near the riverbank while seven wizards quietly judge the boxing match."
)


@pytest.mark.real_model
async def test_drafted_tokens_are_kept_only_where_the_model_agrees(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A reply that copies text from the prompt: drafted from the structure and the prompt,
    much of it is evaluated in batches, and it is the action the model writes without (this
    model, this prompt: batches round differently, so a near tie may go another way)."""
    from reins.models import _greedy_grammar

    evaluations: list[int] = []
    original = _greedy_grammar.GreedyGrammarLlama.eval

    def counted(self: Any, tokens: Any) -> None:
        evaluations.append(len(tokens))
        original(self, tokens)

    monkeypatch.setattr(_greedy_grammar.GreedyGrammarLlama, "eval", counted)
    messages = [SystemMessage(content="You are an agent."), UserMessage(content=GOAL)]
    replies = []
    for drafts in (True, False):
        evaluations.clear()
        model = LocalModel(embedded="smollm2", drafts=drafts, prefix_cache=False)
        response = await model.request(messages, TOOLS, ModelSettings())
        output = response.usage.output_tokens
        replies.append(response.message)
        if drafts:
            steps = len(evaluations) - 1  # after the prompt's: a token, and its draft if any
            assert steps <= output - 10, (steps, output)  # ten drafted tokens or more kept
            assert max(evaluations[1:]) > 2
        else:
            assert evaluations[1:] == [1] * (len(evaluations) - 1)
    drafted, plain = replies
    assert drafted.tool_calls, drafted.text  # a valid action
    assert [(c.name, c.arguments) for c in drafted.tool_calls] == [
        (c.name, c.arguments) for c in plain.tool_calls
    ]
