"""The ``meta`` command group: meta-evaluation of measures over :mod:`rankeval.meta`.

Every command evaluates its runs once with :func:`per_query_values` (the block engine, as
``compare``) and works on the per-query rows of the long frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from rankeval.cli.common import (
    PlainHelpCommand,
    block_size_of,
    cli_registry,
    emit,
    engine_of,
    handled,
    parse_measures,
    precision_of,
    require_measures,
    run_arguments,
    run_sources,
    warnings_to_stderr,
)
from rankeval.cli.shared_options import (
    RUNS_METAVAR,
    BlockSizeOption,
    DebugOption,
    EngineOption,
    JobsOption,
    MeasureOption,
    MemoryLimitOption,
    PluginOption,
    PrecisionOption,
    QrelsArgument,
    QuietTiesOption,
    SchedulerOption,
    WorkersOption,
)
from rankeval.errors import UsageError
from rankeval.options import MAX_SEED, check_seed

if TYPE_CHECKING:
    import pandas as pd

meta_app = typer.Typer(
    name="meta",
    add_completion=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Meta-evaluation: is a measure any good? (correlations of system rankings, topic-set size)",
)

RunsArgument = Annotated[
    list[str],
    typer.Argument(metavar=RUNS_METAVAR, help="The systems: run files; NAME=RUN names the run NAME."),
]


@dataclass(frozen=True)
class Evaluation:
    """How the meta commands evaluate runs: the engine options they share with ``compare``."""

    plugin: tuple[str, ...] = ()
    engine: str = "local"
    jobs: int | None = None
    block_size: str | None = None
    scheduler: str | None = None
    workers: int = 2
    memory_limit: str | None = None
    quiet_ties: bool = False
    debug: bool = False


def per_query_values(
    qrels: list[str], runs: list[str], specs: list[str], how: Evaluation
) -> tuple[list[pd.DataFrame], list[str]]:
    """Evaluate *runs* against each qrels of *qrels* with the measures of *specs*, as
    ``compare`` does (:meth:`rankeval.Evaluator.evaluate` on the block engine; a run read from
    stdin is read once).

    Returns:
        One frame per qrels, the per-query rows (``run, query_id, measure, value``; aggregate
        rows dropped), and the measure names in the order of *specs*.
    """
    require_measures(specs)
    run_args = run_arguments(runs)
    registry = cli_registry(list(how.plugin))
    measures = parse_measures(registry, specs)
    chosen = engine_of(how.engine, how.scheduler, how.workers, how.memory_limit, how.debug)
    size = block_size_of(how.block_size)
    from rankeval.comparison.compare import read_once
    from rankeval.evaluator import Evaluator

    frames = []
    with warnings_to_stderr(how.quiet_ties):
        sources = read_once(run_sources(run_args))
        for path in qrels:
            evaluator = Evaluator(path, measures, registry=registry)
            frame = evaluator.evaluate(sources, jobs=how.jobs, engine=chosen, block_size=size)
            frames.append(frame[frame["query_id"].notna()])
    names = [str(name) for name in dict.fromkeys(frames[0]["measure"])]
    return frames, names


@meta_app.command("corr", cls=PlainHelpCommand)
def corr_cmd(
    qrels: QrelsArgument,
    runs: RunsArgument,
    measure: MeasureOption = [],  # noqa: B006 - typer needs a list default
    method: Annotated[
        str,
        typer.Option(
            "--method",
            help="tau, tau_a, tau_b, tau_ap, tau_ap_a, tau_ap_b, spearman, pearson or rbo (the first "
            "ranking is the reference of the asymmetric ones).",
        ),
    ] = "tau_b",
    qrels2: Annotated[
        str | None,
        typer.Option(
            "--qrels2",
            metavar="QRELS",
            help="Rank the systems by the one -m measure under QRELS and under this qrels file.",
        ),
    ] = None,
    persistence: Annotated[float, typer.Option("--rbo-p", help="RBO's persistence p.")] = 0.9,
    ci: Annotated[
        bool, typer.Option("--ci", help="Add a percentile bootstrap confidence interval over topics.")
    ] = False,
    samples: Annotated[int, typer.Option("--samples", help="Bootstrap samples of --ci.")] = 1000,
    alpha: Annotated[float, typer.Option("--alpha", help="--ci gives a 100(1-alpha)% interval.")] = 0.05,
    seed: Annotated[
        str, typer.Option("--seed", metavar="N", help=f"Seed of the bootstrap, 0 to {MAX_SEED}.")
    ] = "0",
    precision: PrecisionOption = None,
    plugin: PluginOption = [],  # noqa: B006
    engine: EngineOption = "local",
    jobs: JobsOption = None,
    block_size: BlockSizeOption = None,
    scheduler: SchedulerOption = None,
    workers: WorkersOption = 2,
    memory_limit: MemoryLimitOption = None,
    quiet_ties: QuietTiesOption = False,
    debug: DebugOption = False,
) -> None:
    """Correlation between the rankings of the runs by two measures (-m A -m B), or by one measure under two qrels files (-m A --qrels2 Q2)."""
    with handled(debug):
        from rankeval.meta.correlation import METHODS

        if method not in METHODS:
            raise UsageError(f"unknown --method {method!r}; expected one of {', '.join(METHODS)}")
        digits = precision_of(precision)
        number = check_seed(seed, "--seed", text=True)
        if ci and samples < 1:
            raise UsageError("--samples must be at least 1")
        if ci and not 0 < alpha < 1:
            raise UsageError(f"--alpha must be between 0 and 1 (exclusive), got {alpha}")
        how = Evaluation(
            tuple(plugin), engine, jobs, block_size, scheduler, workers, memory_limit, quiet_ties, debug
        )
        frames, names = per_query_values([qrels] if qrels2 is None else [qrels, qrels2], runs, measure, how)
        wanted = 1 if qrels2 is not None else 2
        if len(names) != wanted:
            what = (
                "one measure with --qrels2" if qrels2 is not None else "two measures (-m A -m B) or --qrels2"
            )
            raise UsageError(f"meta corr needs {what}; the -m options give {len(names)}: {', '.join(names)}")
        sides = [(frames[0], names[0]), (frames[-1], names[-1])]
        text = _correlation_text(sides, method, persistence, ci, samples, alpha, number, digits)
        emit(text, None)


def _correlation_text(
    sides: list[tuple[pd.DataFrame, str]],
    method: str,
    persistence: float,
    ci: bool,
    samples: int,
    alpha: float,
    seed: int | None,
    digits: int | None,
) -> str:
    import numpy as np

    from rankeval.meta.correlation import correlation
    from rankeval.meta.values import per_query

    (x, y) = (per_query(frame, name) for frame, name in sides)
    if x.runs != y.runs:
        raise UsageError("the two rankings score different runs")
    if len(x.runs) < 2:
        raise UsageError(f"a correlation needs at least 2 runs, got {len(x.runs)}")
    score = correlation(x.means(), y.means(), method, p=persistence)
    places = 4 if digits is None else digits
    label = f"{method}\t{sides[0][1]}\t{sides[1][1]}\t{len(x.runs)} runs"
    line = f"{label}\t{score:.{places}f}"
    if not ci:
        return line + "\n"
    # resample the topics both rankings have; a sample's ranking is its runs' mean scores there
    common = sorted(set(x.queries) & set(y.queries))
    rows_x = np.array([x.queries.index(q) for q in common])
    rows_y = np.array([y.queries.index(q) for q in common])
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(len(common), np.full(len(common), 1 / len(common)), size=samples)
    means_x = counts @ x.values[rows_x] / len(common)
    means_y = counts @ y.values[rows_y] / len(common)
    draws = np.array(
        [correlation(a, b, method, p=persistence) for a, b in zip(means_x, means_y, strict=True)]
    )
    low, high = np.nanquantile(draws, [alpha / 2, 1 - alpha / 2])
    undefined = int(np.isnan(draws).sum())
    note = f"; {undefined} samples undefined" if undefined else ""
    level = f"{100 * (1 - alpha):g}%"
    return (
        f"{line}\t{level} CI [{low:.{places}f}, {high:.{places}f}]"
        f"\t({samples} bootstrap samples of {len(common)} topics, seed {seed}{note})\n"
    )


@meta_app.command("topics", cls=PlainHelpCommand)
def topics_cmd(
    qrels: QrelsArgument,
    runs: RunsArgument,
    measure: MeasureOption = [],  # noqa: B006 - typer needs a list default
    min_diff: Annotated[
        float | None,
        typer.Option(
            "--min-diff", metavar="D", help="The smallest difference (t-test) or range (ANOVA) to detect."
        ),
    ] = None,
    width: Annotated[
        float | None,
        typer.Option("--width", metavar="W", help="The largest expected width of a confidence interval."),
    ] = None,
    alpha: Annotated[float, typer.Option("--alpha", help="Significance level.")] = 0.05,
    beta: Annotated[float, typer.Option("--beta", help="Type II error rate (power 1 - beta).")] = 0.20,
    systems: Annotated[
        int | None,
        typer.Option("--systems", metavar="M", help="Systems the ANOVA compares (default: the runs given)."),
    ] = None,
    precision: PrecisionOption = None,
    plugin: PluginOption = [],  # noqa: B006
    engine: EngineOption = "local",
    jobs: JobsOption = None,
    block_size: BlockSizeOption = None,
    scheduler: SchedulerOption = None,
    workers: WorkersOption = 2,
    memory_limit: MemoryLimitOption = None,
    quiet_ties: QuietTiesOption = False,
    debug: DebugOption = False,
) -> None:
    """Topic-set-size design (Sakai 2016): the topics a paired t-test, a one-way ANOVA and a confidence interval need, from each measure's residual variance over these runs."""
    with handled(debug):
        from rankeval.meta.topics import topics_for_anova, topics_for_ci, topics_for_ttest, variance_estimate
        from rankeval.meta.values import per_query

        if min_diff is None and width is None:
            raise UsageError(
                "meta topics needs --min-diff D (t-test and ANOVA) or --width W (interval), or both"
            )
        digits = precision_of(precision)
        places = 6 if digits is None else digits
        how = Evaluation(
            tuple(plugin), engine, jobs, block_size, scheduler, workers, memory_limit, quiet_ties, debug
        )
        (frame,), names = per_query_values([qrels], runs, measure, how)
        lines = []
        for name in names:
            matrix = per_query(frame, name)
            variance = variance_estimate(matrix.values)
            count = systems if systems is not None else len(matrix.runs)
            shape = f"{len(matrix.queries)} topics x {len(matrix.runs)} runs"
            lines.append(f"{name}\tresidual variance\t{variance:.{places}f}\t({shape})")
            if min_diff is not None:
                n = topics_for_ttest(variance, min_diff, alpha, beta)
                lines.append(
                    f"{name}\tpaired t-test\t{n}\t(min diff {min_diff:g}, alpha {alpha:g}, beta {beta:g})"
                )
                n = topics_for_anova(variance, min_diff, count, alpha, beta)
                lines.append(f"{name}\tone-way ANOVA\t{n}\t({count} systems, min range {min_diff:g})")
            if width is not None:
                n = topics_for_ci(variance, width, alpha)
                lines.append(f"{name}\tCI width\t{n}\t(expected width <= {width:g}, alpha {alpha:g})")
        emit("".join(f"{line}\n" for line in lines), None)
