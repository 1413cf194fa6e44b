"""The conditions a question is replayed under: what goes into the prompt beside the question.

- ``off``: no memory, the question alone;
- ``raw``: the memories today's spec injects, as plain lines without instructions (the write-up's
  A format);
- ``today``: the B-format block at the spec the options give (the spec the user runs today);
- ``tuned``: the B-format block at the spec the sweep chooses on this dataset (``--select``, over
  the notebooks' grid: ``bonus_range``, ``tau_range`` and the threshold range of the scores'
  model), at today's candidates, inject and decay family;
- a variant (``--variant NAME:field=value,...``): the B-format block at today's spec with those
  fields changed.

Every prompt is built by ``memlab.output.prompt`` from the memories ``memlab.tuning.evaluate``
injects for the question at the condition's spec: exactly what ``memlab prompt`` prints.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from memlab.core.errors import InputError, MemlabWarning
from memlab.core.grid import TAU_RANGE
from memlab.core.registry import check_names
from memlab.core.selection import DEFAULT_RULE
from memlab.core.spec import RetrievalSpec

if TYPE_CHECKING:
    from memlab.scores.problem import RetrievalProblem

CONDITION_NAMES = ("off", "raw", "today", "tuned")
DEFAULT_CONDITIONS = CONDITION_NAMES


@dataclass(frozen=True)
class Condition:
    """One condition: its name, the block form (None: no memory; ``raw``; ``b``), the spec whose
    injected memories the block holds, and a line for people."""

    name: str
    block: str | None
    spec: RetrievalSpec | None
    about: str

    def spec_text(self) -> str:
        s = self.spec
        if s is None:
            return ""
        family = "" if s.default_family else f" decay={s.decay} combine={s.combine}"
        return (
            f"bonus={s.bonus:g} tau_days={s.tau_days:g} threshold={s.threshold:g} "
            f"candidates={s.candidates} inject={s.inject}{family}"
        )


def parse_variant(text: str) -> tuple[str, dict[str, float | int | str]]:
    """``NAME:field=value,...`` -> (name, fields); the values are checked by the spec."""
    from memlab.core.spec import INTEGER_FIELDS, NAME_FIELDS, SPEC_FIELDS

    name, sep, body = text.partition(":")
    name = name.strip()
    if not sep or not name or not body.strip():
        raise InputError(f"--variant: expected NAME:field=value,..., got {text!r}")
    if name in CONDITION_NAMES:
        raise InputError(f"--variant: {name!r} names a condition already ({', '.join(CONDITION_NAMES)})")
    fields: dict[str, float | int | str] = {}
    for part in body.split(","):
        key, eq, value = (x.strip() for x in part.partition("="))
        if not eq or key not in SPEC_FIELDS:
            raise InputError(
                f"--variant {name}: expected field=value with a field of "
                f"{', '.join(SPEC_FIELDS)}, got {part!r}"
            )
        if key in NAME_FIELDS:
            fields[key] = value
            continue
        try:
            fields[key] = int(value) if key in INTEGER_FIELDS else float(value)
        except ValueError:
            raise InputError(f"--variant {name}: {key}: expected a number, got {value!r}") from None
    return name, fields


@dataclass(frozen=True)
class TuneGrid:
    """The sweep that chooses the ``tuned`` condition's spec: axes as ``memlab sweep`` reads them
    (``start:stop:step`` or a comma list); no threshold or bonus range: the scores' model's."""

    rule: str = DEFAULT_RULE
    bonus_range: str | None = None  # None or "": the model's, as the threshold range
    tau_range: str = TAU_RANGE
    threshold_range: str | None = None


def tuned_spec(problem: RetrievalProblem, tune: TuneGrid) -> tuple[RetrievalSpec, str]:
    """The spec the sweep chooses by ``tune.rule`` on the problem's dataset and criteria, at
    today's candidates, inject and family, and how it was chosen."""
    from memlab.core.criteria import dataset_criteria
    from memlab.core.grid import Grid, parse_axis
    from memlab.core.selection import choose_streaming
    from memlab.core.sweep_pool import pooled_sweep_chunks
    from memlab.tuning.tuned import choice_selection, fallback_reason, spec_shortfall

    today = problem.spec
    thresholds = tune.threshold_range or problem.defaults.threshold_range
    bonuses = tune.bonus_range or problem.defaults.bonus_range
    grid = Grid(
        decay=(today.decay,),
        combine=(today.combine,),
        bonus=parse_axis(bonuses, "bonus"),
        tau_days=parse_axis(tune.tau_range, "tau"),
        threshold=parse_axis(thresholds, "threshold"),
        candidates=parse_axis(str(today.candidates), "candidates", integer=True),
        inject=parse_axis(str(today.inject), "inject", integer=True),
    )
    criteria = dataset_criteria(problem.dataset)
    frames = pooled_sweep_chunks(problem.raw, problem.ages(), problem.labels(), grid, criteria, problem.pool)
    # as memlab sweep chooses: when nothing is feasible, the fallback rule, and the one line that
    # says what its spec fails (memlab.tuning.tuned.spec_shortfall)
    choice = choose_streaming(frames, tune.rule, criteria=[c.name for c in criteria])
    if choice.row.empty:
        raise InputError(f"the tuned condition: the grid over {problem.dataset.name} is empty")
    row = choice.row.iloc[0]
    spec = replace(
        today, bonus=float(row["bonus"]), tau_days=float(row["tau_days"]), threshold=float(row["threshold"])
    )
    how = f"{choice.rule} over bonus {bonuses}, tau {tune.tau_range}, threshold {thresholds}"
    chosen = problem.with_spec(spec)
    reason = fallback_reason(choice_selection(choice))
    if reason is not None:
        warnings.warn(
            spec_shortfall(chosen, criteria, what="the tuned condition's spec", fallback=reason),
            MemlabWarning,
            stacklevel=2,
        )
        how += ", the fallback"
    return chosen.spec, how


def build_conditions(
    problem: RetrievalProblem,
    names: tuple[str, ...] = DEFAULT_CONDITIONS,
    variants: tuple[str, ...] = (),
    tune: TuneGrid | None = None,
    tuned: RetrievalSpec | None = None,
) -> list[Condition]:
    """The conditions named (in that order), then the variants (``NAME:field=value,...``)."""
    names = check_names(dict.fromkeys(CONDITION_NAMES), list(names), "condition")
    today = problem.spec
    out: list[Condition] = []
    for name in names:
        if name == "off":
            out.append(Condition("off", None, None, "no memory: the question alone"))
        elif name == "raw":
            out.append(Condition("raw", "raw", today, "today's injected memories without instructions (A)"))
        elif name == "today":
            out.append(Condition("today", "b", today, "the B-format block at today's spec"))
        else:
            spec, how = (tuned, "given") if tuned is not None else tuned_spec(problem, tune or TuneGrid())
            out.append(Condition("tuned", "b", spec, f"the B-format block at the tuned spec ({how})"))
    seen = {c.name for c in out}
    for text in variants:
        name, fields = parse_variant(text)
        if name in seen:
            raise InputError(f"--variant: {name!r} is given twice")
        seen.add(name)
        spec = problem.with_spec(replace(today, **fields)).spec
        out.append(Condition(name, "b", spec, f"the B-format block at variant {name}"))
    return out
