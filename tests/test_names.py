"""The names `reins` offers (issue 28): what most programs use at the top, the events in
`reins.events`, one name per concept; a name that moved still works for one release, with a
DeprecationWarning that says where it lives now."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings

import pytest

import reins
import reins.context
import reins.events
import reins.policies


def test_the_top_holds_what_most_programs_use_and_each_loads_without_a_warning() -> None:
    assert len(reins.__all__) <= 77  # it was 111 (the settings groups are here too: Memory)
    for name in ("Agent", "tool", "ToolContext", "RunResult", "UserMessage", "Model"):
        assert name in reins.__all__
    for name in ("Policy", "Continue", "Inject", "Reject", "Stop", "Replace", "Verified"):
        assert name in reins.__all__  # the verdicts a policy of yours returns
    assert not {"RunFinished", "Event", "Reflective", "ReflectiveAgent", "Answer"} & set(
        reins.__all__
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in reins.__all__:
            getattr(reins, name)
        for name in reins.events.__all__:
            getattr(reins.events, name)


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ("RunFinished", reins.events.RunFinished, "reins.events.RunFinished"),
        ("EVENT", reins.events.EVENT, "reins.events.EVENT"),
        ("Reflective", reins.policies.Reflective, "reins.policies.Reflective"),
        ("TokenBudget", reins.policies.TokenBudget, "reins.policies.TokenBudget"),
        ("Answer", reins.Replace, "reins.Replace"),
        ("ReflectiveAgent", None, "reins.Agent(reflect=True)"),
    ],
)
def test_an_old_top_level_name_warns_and_is_what_it_was(old: str, new: object, says: str) -> None:
    with pytest.warns(DeprecationWarning, match=re.escape(f"reins.{old} is now {says}")) as caught:
        value = getattr(reins, old)
    assert caught[0].filename == __file__  # the warning points at the line that used it
    if new is not None:
        assert value is new
    else:
        assert value.__name__ == old


def test_from_reins_import_an_old_name_warns() -> None:
    with pytest.warns(DeprecationWarning, match="reins.Notice is now reins.events.Notice"):
        from reins import Notice  # noqa: F401


def test_one_name_per_concept_with_the_old_spellings_warning() -> None:
    with pytest.warns(DeprecationWarning, match=r"reins\.policies\.Answer is now reins\.Replace"):
        assert reins.policies.Answer is reins.Replace  # type: ignore[attr-defined]
    with pytest.warns(DeprecationWarning, match=r"reins\.context\.Section is now"):
        old = reins.context.Section  # type: ignore[attr-defined]
    section = old(name="team", render_fn=lambda context: "be kind")
    assert section == reins.context.PromptSection(name="team", render=section.render)
    with pytest.raises(AttributeError, match="module 'reins' has no attribute 'Nope'"):
        reins.Nope  # type: ignore[attr-defined]  # noqa: B018


def test_import_reins_stays_lazy() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys, reins; print(sorted(m for m in sys.modules "
         "if m.startswith('reins.')))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )  # fmt: skip
    assert done.stdout.strip() == "[]"
