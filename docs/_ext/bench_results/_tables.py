"""TABLES: what each table of the performance pages takes from its result file."""

from __future__ import annotations

from collections.abc import Callable

from ._values import (
    STOP_SOURCES,
    STREAM_RUNS,
    Table,
    _coefficients,
    _held_out,
    _pruning_runs,
    _runs_since,
    _saturation,
    _when,
    each,
    fmt,
    get,
    grid,
    humanize,
    pairs,
    rows,
    summary_figures,
)


def _times(*keys: str) -> Callable[[dict], str]:
    """A ratio near 1 at ``keys`` of the result, to the thousandth ("1.003×"): the figures judged differ there."""
    return lambda r: f"{get(r, keys):.3f}×"


def _random_start(r: dict, sampler: str) -> str:
    """How many trials ``sampler`` draws at random before it models the space (bench_samplers' ``startup``)."""
    return "all" if sampler == "random" else fmt(r["startup"][sampler]["default"])


# What each table takes from its result file: TABLES[benchmark][table] = function of the JSON -> Table.
TABLES: dict[str, dict[str, Callable[[dict], Table]]] = {
    "dispatch": {
        "rates": lambda r: rows(
            r,
            ["median trials/s", "best trials/s", "kernel CPU a trial"],
            {
                "jupyter_dist hpo()": (
                    "ours.median_per_s",
                    "ours.best_per_s",
                    "ours.kernel_cpu_ms_per_trial",
                ),
                "raw client.map": (
                    "raw_dask.median_per_s",
                    "raw_dask.best_per_s",
                    "raw_dask.kernel_cpu_ms_per_task",
                ),
                "Optuna's in-memory loop": (
                    "optuna_in_memory_reference.median_per_s",
                    "optuna_in_memory_reference.best_per_s",
                    None,
                ),
            },
        ),
        "ratio": lambda r: grid(
            r, {"hpo() ÷ raw client.map": "ratio_ours_over_raw"}, {"medians": "median", "best runs": "best"}
        ),
    },
    "pareto": {
        "runs": lambda r: grid(
            r,
            {
                "grid of 64, no pruning": "grid.none",
                "grid of 64, pruner='pareto'": "grid.pareto",
                **{
                    f"TPE seed {run['seed']}, {label}": ("tpe", "runs", str(i), key)
                    for i, run in enumerate(r["tpe"]["runs"])
                    for key, label in (("none", "no pruning"), ("pareto", "pruner='pareto'"))
                },
            },
            {
                "hypervolume": "hypervolume",
                "front": "front_size",
                "distance to the true front": "mean_distance_to_true_front",
                "steps": "steps",
                "pruned": "pruned",
                "wall": "wall_s",
            },
        ),
        "summary": lambda r: pairs(
            r,
            {
                "grid: hypervolume, pareto ÷ none": "grid.hv_ratio",
                "grid: share of the steps": "grid.step_share:%",
                "TPE: hypervolume, pareto ÷ none (median of 3)": "tpe.hv_ratio_median",
                "TPE: lowest of the 3": "tpe.hv_ratio_min",
                "TPE: share of the steps (median)": "tpe.step_share_median:%",
                "target met": "met",
            },
        ),
    },
    "elastic": {
        "lost": lambda r: grid(
            r,
            {
                f"k={k}, {label}": ("every", k, way)
                for k in r["every"]
                for way, label in (
                    ("elastic", "elastic (min_workers=2)"),
                    ("by_hand_checkpoint", "by hand, from the checkpoint"),
                    ("by_hand_zero", "by hand, from zero"),
                )
            },
            {
                "time lost (median)": "lost_s_median:s",
                "worst": "lost_s_max:s",
                "of it, recovery": "recovery_s_median:s",
                "of which noticing": "noticed_s_median:s",
                "steps redone": "steps_redone_median",
                "wall of the calls (median)": "wall_s_median:s",
            },
        ),
        "summary": lambda r: grid(
            r,
            {f"checkpoint every {k} steps": ("every", k) for k in r["every"]},
            {
                "baseline wall, no kill (3 ranks)": "baseline.wall_s_median:s",
                "by hand from the checkpoint ÷ elastic, time lost": "lost_ratio_by_hand_checkpoint_over_elastic:x",
                "by hand from the checkpoint ÷ elastic, recovery": "recovery_ratio_by_hand_checkpoint_over_elastic:x",
                "from zero ÷ elastic": "lost_ratio_by_hand_zero_over_elastic:x",
            },
        ),
    },
    "pbt": {
        "quality": lambda r: grid(
            r,
            {"toy problem (accuracy)": "toy", "digits MLP (validation accuracy)": "digits"},
            {
                "PBT best, median": "pbt_best_median",
                "independent best, median": "independent_best_median",
                "PBT − independent, median": "margin_median",
                "smallest margin": "margin_min",
                "PBT ahead": lambda d: f"{d['pbt_wins']} of {d['runs']} runs",
                "wall, PBT ÷ independent": "wall_ratio_median",
            },
        ),
        "overhead": lambda r: pairs(
            r,
            {
                "copy of a donor's checkpoint, per exploit (median)": "overhead.copy_per_exploit.median_s",
                "the checkpoint copied": "overhead.copy_per_exploit.checkpoint_bytes",
                "a segment's restart: round trip, function start, restore (median)": (
                    "overhead.restart_s_per_segment_median"
                ),
            },
        ),
    },
    "warm_start": {
        "trials": lambda r: grid(
            r,
            {
                "6-d Hartmann (minimised), seeds 0–4": "hartmann6",
                f"6-d Hartmann, {r['hartmann6']['more_seeds']['runs']} seeds": "hartmann6.more_seeds",
                "digits MLP (validation accuracy), seeds 0–4": "digits",
                f"digits MLP, {r['digits']['more_seeds']['runs']} seeds": "digits.more_seeds",
            },
            {
                "cold: trials to its best of 60, median": "cold_trials_needed_median",
                "warm: new trials to the cold best, median": "warm_trials_needed_median",
                "warm ÷ cold, median": "warm_over_cold_median:x",
                "warm reached the cold best": lambda d: f"{d['warm_reached']} of {d['runs']} seeds",
                "warm's best at least as good": lambda d: (
                    f"{d['warm_best_at_least_as_good']} of {d['runs']} seeds"
                ),
            },
        ),
    },
    "samplers": {
        "single": lambda r: grid(
            r,
            each(r, "single.samplers"),
            {
                **{f"after {b} trials": f"regret_median.{b}" for b in r["single"]["budgets"]},
                f"worst seed, after {r['single']['budgets'][-1]}": lambda d: fmt(
                    max(run["regret"][str(r["single"]["budgets"][-1])] for run in d["runs"])
                ),
                "the sampler's time a trial": "sampler_time_per_trial_s_median:s",
                f"wall of {r['single']['budgets'][-1]} trials": "wall_s_median:s",
            },
        ),
        "lattice": lambda r: pairs(
            r,
            {
                "points in the grid": "single.grid_lattice.points",
                "its best point: distance to the minimum": "single.grid_lattice.regret",
            },
        ),
        "startup": lambda r: grid(
            r,
            each(r, "startup"),
            {
                "Optuna class": "optuna_class",
                "its argument": "argument",
                "default: trials first drawn at random": "default",
            },
        ),
        "pruners": lambda r: grid(
            r,
            each(
                r,
                "pruners.runs",
                label=lambda k: {"none": "None", "asha_4x_trials": '"asha", 4× the trials'}.get(k, f'"{k}"'),
            ),
            {
                "trials": lambda d: fmt(d["runs"][0]["trials"]),
                "its pick's true final value": "best_true_final_median",
                "below the best possible": "regret_median",
                f"steps: share of {r['pruners']['trials']} full trials": "step_share_median",
                "trials run to the end": "completed_median",
                "wall": "wall_s_median:s",
            },
        ),
        "several": lambda r: rows(
            r,
            ["first trials at random", *(f"after {b} trials" for b in r["several"]["budgets"])],
            {
                name: (
                    lambda r, name=name: _random_start(r, name),
                    *(
                        f"several.samplers.{name}.hypervolume_share_median.{b}"
                        for b in r["several"]["budgets"]
                    ),
                )
                for name in r["several"]["samplers"]
            },
        ),
    },
    "overhead": {
        "times": lambda r: grid(
            r,
            {"median": "median_s", "fastest": "min_s", "spread (slowest ÷ fastest − 1)": "spread_pct"},
            {
                "direct call": "{}.direct",
                "client.submit().result()": "{}.raw_dask",
                "hpo(), 1 trial": "{}.ours",
            },
        ),
        "slowdown": lambda r: grid(
            r,
            {
                "hpo() against the direct call": "ours_vs_direct",
                "client.submit() against it": "raw_dask_vs_direct",
            },
            {
                "medians": "slowdown_pct.{}",
                "paired per repeat, median": "slowdown_pct_paired_median.{}",
                "fastest runs": "slowdown_pct_by_min.{}",
            },
        ),
        "fixed": lambda r: pairs(
            r,
            {
                "fixed cost around the function (median)": "ours_fixed_overhead_median_s",
                "the trial's own duration on the worker, against the direct call": (
                    "slowdown_pct.ours_worker_side_vs_direct"
                ),
            },
        ),
    },
    "utilization": {
        "cost": lambda r: pairs(
            r,
            {
                "median trial, sampling on": "median_trial_s.on",
                "median trial, sampling off": "median_trial_s.off",
                "stretch (duration ÷ the trial thread's CPU), sampling on": _times("median_stretch", "on"),
                "stretch, sampling off": _times("median_stretch", "off"),
                "on ÷ off, median of the rounds' stretch ratios": _times("stretch_ratio"),
                "overhead": "overhead_pct",
                "overhead, 95% interval (a bootstrap of the rounds)": lambda r: "{:+.2f}% to {:+.2f}%".format(
                    *get(r, ("overhead_pct_interval_95",))
                ),
                "neither sampled (the method's noise), median stretch ratio": _times("a_a_stretch_ratio"),
                "on ÷ off, median of the rounds' duration ratios": _times("duration_ratio"),
                "neither sampled, median duration ratio": _times("a_a_duration_ratio"),
                "the sampler thread's CPU, of the sampled trials' time": lambda r: (
                    f"{get(r, ('sampler_cpu_pct_of_trial_time',)):.3f}%"
                ),
                "the kernel's CPU taking the samples in, of the sampled trials' time": lambda r: (
                    f"{get(r, ('kernel_cpu_pct_of_sampled_trial_time',)):.2f}%"
                ),
                "samples per second of trial": "samples_per_trial_second",
            },
        ),
    },
    "trial_speed": {
        "ratio": lambda r: grid(
            r,
            {"digits MLP": "results.digits", "compute-bound MLP": "results.compute"},
            {
                "pool ÷ hpo(), median of the rounds": "ratio_pool_over_ours",
                "lowest round": lambda d: fmt(min(d["ratios_per_round"]), "x"),
                "highest round": lambda d: fmt(max(d["ratios_per_round"]), "x"),
                "ratio of the median walls": "ratio_of_median_walls",
                "target met": "met",
            },
        ),
        "time": lambda r: grid(
            r,
            {"digits MLP": "results.digits", "compute-bound MLP": "results.compute"},
            {
                "wall, hpo()": "median_wall_s.ours",
                "wall, pool": "median_wall_s.pool",
                "trials' durations, hpo()": "median_trial_seconds.ours",
                "trials' durations, pool": "median_trial_seconds.pool",
                "cores busy, hpo()": "median_busy_share.ours",
                "cores busy, pool": "median_busy_share.pool",
            },
        ),
    },
    "streaming": {
        "main": lambda r: grid(
            r,
            STREAM_RUNS,
            {
                "sent/s": "sent_per_s",
                "delivered/s": "delivered_per_s",
                "latency p50": "p50_s",
                "latency p99": "p99_s",
                "lost": "lost",
            },
        ),
    },
    "store": {
        "main": lambda r: rows(
            r,
            ["store off", "store on", "cost of the store"],
            {
                "dispatch, trials/s": (
                    "median.dispatch_trials_per_s.off",
                    "median.dispatch_trials_per_s.on",
                    "cost_of_the_store.dispatch",
                ),
                "streaming, reports/s delivered": (
                    "median.streaming_delivered_per_s.off",
                    "median.streaming_delivered_per_s.on",
                    "cost_of_the_store.streaming",
                ),
                "streaming, latency p50": ("median.streaming_p50_s.off", "median.streaming_p50_s.on", None),
            },
        ),
        "disk": lambda r: grid(
            r,
            {f"round {i + 1}": ("runs", "on", i) for i in range(len(r["runs"]["on"]))},
            {
                "reports sent": "streaming_sent",
                "reports stored": "stored_reports",
                "trials stored": "stored_trials",
                "store file": "store_bytes",
                "latency p99": "streaming_p99_s",
            },
        ),
    },
    "tracking": {
        "main": lambda r: rows(
            r,
            ["no tracker", "MLflow", "TensorBoard"],
            {
                "dispatch, 1000 no-op trials: wall": (
                    "median.dispatch_s.none:s",
                    "median.dispatch_s.mlflow:s",
                    "median.dispatch_s.tensorboard:s",
                ),
                "dispatch: what the tracker adds": (
                    None,
                    "cost_of_the_tracker.mlflow.dispatch:+%",
                    "cost_of_the_tracker.tensorboard.dispatch:+%",
                ),
                "streaming, tight loop: wall": (
                    "median.streaming_wall_s.none:s",
                    "median.streaming_wall_s.mlflow:s",
                    "median.streaming_wall_s.tensorboard:s",
                ),
                "streaming: what the tracker adds to the wall": (
                    None,
                    "cost_of_the_tracker.mlflow.streaming_wall:+%",
                    "cost_of_the_tracker.tensorboard.streaming_wall:+%",
                ),
                "streaming, reports/s delivered": (
                    "median.streaming_delivered_per_s.none:n",
                    "median.streaming_delivered_per_s.mlflow:n",
                    "median.streaming_delivered_per_s.tensorboard:n",
                ),
                "streaming: reports/s it costs": (
                    None,
                    "cost_of_the_tracker.mlflow.streaming_delivered:%",
                    "cost_of_the_tracker.tensorboard.streaming_delivered:%",
                ),
            },
        ),
        "export": lambda r: rows(
            r,
            ["MLflow", "TensorBoard"],
            {
                "dispatch: export complete after the run's end": (
                    "export_done_after_s.dispatch_export_done_after_s.mlflow:s",
                    "export_done_after_s.dispatch_export_done_after_s.tensorboard:s",
                ),
                "streaming: export complete after the run's end": (
                    "export_done_after_s.streaming_export_done_after_s.mlflow:s",
                    "export_done_after_s.streaming_export_done_after_s.tensorboard:s",
                ),
            },
        ),
    },
    "scale": {
        "run": lambda r: grid(
            r,
            {"store on": "sides.on", "store off": "sides.off"},
            {
                "wall": "wall_s",
                "reports/s": "reports_per_s",
                "delivery p50": "latency_s.p50",
                "delivery p99": "latency_s.p99",
                "kernel RSS peak": "kernel_rss_mb.peak",
                "kernel CPU a report": "kernel_cpu_us_per_report",
            },
        ),
        "ratios": lambda r: pairs(
            r,
            {
                "wall, store on ÷ off": "ratios_on_over_off.wall",
                "delivery p99, on ÷ off": "ratios_on_over_off.latency_p99",
                "kernel RSS peak, on ÷ off": "ratios_on_over_off.kernel_rss_peak",
                "kernel CPU, on ÷ off": "ratios_on_over_off.kernel_cpu",
                "the store's CPU in the kernel, a report": "store_kernel_cpu_us_per_report",
                "store file": "store_mb",
                "store file, bytes a report": "store_bytes_per_report:n",
            },
        ),
        "read": lambda r: rows(
            r,
            ["time", "rows"],
            {
                "experiments()": ("read_back.experiments_s", "read_back.listed"),
                "load()": ("read_back.load_s", None),
                "load(), then .best": ("read_back.load_then_best_s", None),
                "load(), then .trials": ("read_back.load_then_trials_s", "read_back.trials_rows"),
                "load(), then .history": ("read_back.load_then_history_s", "read_back.history_rows"),
                "REST: the experiments listing": ("http.listing_s", "http.listed"),
                "REST: one experiment": ("http.experiment_s", "http.experiment_trials"),
                "REST: every metric, paged": ("http.metrics_all_pages_s", "http.metrics_rows"),
                "REST: one page of metrics": ("http.metrics_per_page_s", None),
            },
        ),
    },
    "scale_100k": {
        "targets": lambda r: rows(
            r,
            ["measured", "target", "met"],
            {
                "trial rate, 100,000 ÷ 10,000 trials": (
                    "rate_ratio_large_over_small:x",
                    "target.rate_ratio_at_least:x",
                    "met.rate_ratio",
                ),
                "kernel memory a finished trial": (
                    lambda d: f"{d['kernel_bytes_per_finished_trial']:,.0f} B",
                    lambda d: f"≤ {d['target']['kernel_bytes_per_finished_trial_at_most']:,} B",
                    "met.kernel_bytes_per_finished_trial",
                ),
                "load() + .trials": (
                    "read_back.load_then_trials_s:s",
                    "target.load_then_trials_s_below:s",
                    "met.load_then_trials",
                ),
                ".history, a million rows": (
                    "read_back.history_s_per_million_rows:s",
                    "target.history_s_per_million_rows_at_most:s",
                    "met.history_per_million_rows",
                ),
                "REST detail": (
                    lambda d: f"{d['http']['detail_bytes'] / 1000:,.0f} KB",
                    lambda d: f"≤ {d['target']['rest_detail_bytes_at_most'] / 1000:,.0f} KB",
                    "met.rest_detail_bytes",
                ),
                "nothing lost or doubled": ("met.nothing_lost_or_doubled", None, None),
            },
        ),
        "runs": lambda r: grid(
            r,
            {f"{int(k):,} trials": ("runs", k) for k in r["runs"]},
            {
                "wall": "wall_s:s",
                "trials/s": "trials_per_s",
                "kernel CPU a trial": "kernel_cpu_ms_per_trial:ms",
                "kernel RSS growth a trial": lambda d: (
                    f"{d['kernel_rss_growth_bytes_per_finished_trial']:,.0f} B"
                ),
                "trials/s, last tenth": lambda d: fmt(d["rate_by_tenth_of_trials"][-1]["per_s"]),
            },
        ),
        "reads": lambda r: rows(
            r,
            ["time", "size"],
            {
                "load()": ("read_back.load_s:s", None),
                "load(), then .trials": ("read_back.load_then_trials_s:s", "read_back.trials_rows"),
                ".history": ("read_back.history_s:s", "read_back.history_rows"),
                "REST: the experiments listing": (
                    "http.listing_s:s",
                    lambda d: f"{d['http']['listing_bytes']:,} B",
                ),
                "REST: the experiment's detail": (
                    "http.detail_s:s",
                    lambda d: f"{d['http']['detail_bytes']:,} B",
                ),
                "REST: its last page of 200 trials": (
                    "http.last_page_s?:s",
                    lambda d: f"{d['http'].get('last_page_bytes', 0):,} B",
                ),
            },
        ),
    },
    "scalability": {
        "efficiency": lambda r: grid(
            r,
            each(r, "shapes", skip=("dispatch",)),
            {
                "trials": "what",
                "workers × threads": lambda d: f"{d['sizes']['workers']} × {d['sizes']['threads']}",
                "minimum": "minimum_s",
                "wall": "wall_s",
                "efficiency": "efficiency",
                "0.4, same machine": lambda d: fmt(
                    d["minimum_s"] / d["sizes"]["issue_0_4_wall_s"]
                    if d["sizes"]["issue_0_4_wall_s"]
                    else None
                ),
                "Ray Tune, published": "sizes.ray_published.efficiency",
                "target met": "met",
            },
        ),
        "costs": lambda r: grid(
            r,
            each(r, "shapes", skip=("dispatch",)),
            {
                "reports delivered": "reports_check.delivered",
                "lost": "reports_check.lost",
                "doubled": "reports_check.doubled",
                "delivery p50": "latency_s.p50",
                "delivery p99": "latency_s.p99",
                "kernel CPU a trial": "kernel.ms_per_trial",
                "kernel CPU a report": "kernel.ms_per_report",
                "workers' CPU a trial": "workers.ms_per_trial",
            },
        ),
        "dispatch": lambda r: pairs(
            r,
            {
                "hpo(), median trials/s": "shapes.dispatch.ours.median_per_s",
                "raw client.map, median tasks/s": "shapes.dispatch.raw_dask.median_per_s",
                "hpo() ÷ client.map": "shapes.dispatch.ratio_ours_over_raw.median",
                "target met": "shapes.dispatch.met",
            },
        ),
    },
    "cost_model": {
        "points": lambda r: grid(
            r,
            {p["label"]: ("points", i) for i, p in enumerate(r["points"])},
            {
                "trials ended/s": "rates.trials_per_s",
                "reports/s": "rates.reports_per_s",
                "Dask events/s": "rates.events_per_s",
                "kernel": "cores.kernel",
                "scheduler": "cores.scheduler",
                "workers": "cores.workers",
                "whole machine": "cores.machine",
            },
        ),
        "model": _coefficients,
        "batching": lambda r: pairs(
            r,
            {
                **{
                    f"Dask events a report, at {rate} reports/s a trial": f"model.batching.events_per_report_by_rate.{rate}"
                    for rate in get(r, ("model", "batching", "events_per_report_by_rate"))
                },
                "Dask events a trial (start and outcome)": "model.batching.events_per_trial",
            },
        ),
        "saturation": _saturation,
        "largest": lambda r: grid(
            r,
            each(r, "largest_cluster_one_kernel_drives"),
            {
                "kernel": "trials_at_once.kernel",
                "scheduler": "trials_at_once.scheduler",
                "first to fill a core": "first_to_saturate",
                "reports/s then": "reports_per_s_then",
            },
        ),
        "held_out": _held_out,
    },
    "pruning": {
        "synthetic": _pruning_runs("synthetic"),
        "mlp": _pruning_runs("mlp"),
        "latency": lambda r: grid(
            r,
            {
                **each(r, "stop_latency_s.by_source", label=lambda k: STOP_SOURCES.get(k, k)),
                "all of them": "stop_latency_s.all",
            },
            {"pruned trials": "n", "p50": "p50", "p90": "p90", "p99": "p99", "max": "max"},
        ),
        "breakdown": lambda r: grid(
            r,
            each(
                r,
                "stop_latency_s.threshold_5ms_breakdown",
                label=lambda k: (
                    humanize((k,)).replace(" to ", " → ").replace("stop latency", "decided → stopped")
                ),
            ),
            {"p50": "p50", "p90": "p90", "p99": "p99", "max": "max"},
        ),
    },
    "ddp": {
        "main": lambda r: grid(
            r,
            {
                "plain loop in the kernel process": "plain",
                "data_parallel(), 1 rank": "ranks_1",
                "data_parallel(), 2 ranks": "ranks_2",
                "PyTorch DDP, 2 processes": "torch_ddp_2",
            },
            {"median samples/s": "median_samples_per_s.{}", "each run": "samples_per_s.{}"},
        ),
        "ratios": lambda r: pairs(
            r,
            {
                "2 ranks ÷ 1 rank": "scaling_2_over_1",
                "efficiency at 2 ranks": "efficiency_2:%",
                "1 rank ÷ the plain loop": "one_rank_over_plain_loop",
                "2 ranks ÷ PyTorch DDP": "two_ranks_over_torch_ddp",
                "PyTorch DDP ÷ the plain loop": "torch_ddp_scaling_over_plain_loop",
            },
        ),
    },
    "fsdp": {
        "main": lambda r: rows(
            r,
            ["samples/s", "model state per rank", "peak RSS growth per rank"],
            {
                "DDP": (
                    "median.ddp.samples_per_s",
                    "median.ddp.model_state_mb_per_rank",
                    "median.ddp.peak_rss_growth_mb_per_rank",
                ),
                "FSDP": (
                    "median.fsdp.samples_per_s",
                    "median.fsdp.model_state_mb_per_rank",
                    "median.fsdp.peak_rss_growth_mb_per_rank",
                ),
                "FSDP ÷ DDP": (
                    "ratios_fsdp_vs_ddp.samples_per_s",
                    "ratios_fsdp_vs_ddp.model_state_per_rank",
                    "ratios_fsdp_vs_ddp.peak_rss_growth_per_rank",
                ),
            },
        ),
    },
    "gpu": {
        "steps": lambda r: rows(
            r,
            ["plain PyTorch", "data_parallel()", "cost a step"],
            {
                **{
                    p: (
                        f"data_parallel.median_step_ms.plain_{p}",
                        f"data_parallel.median_step_ms.data_parallel_{p}",
                        f"data_parallel.overhead_per_step.{p}:+%",
                    )
                    for p in ("fp32", "bf16", "fp16")
                },
                "FSDP, fp32": (
                    "data_parallel.median_step_ms.plain_fsdp_fp32",
                    "data_parallel.median_step_ms.fsdp_fp32",
                    "data_parallel.fsdp_overhead_per_step_fp32:+%",
                ),
            },
        ),
        "other": lambda r: pairs(
            r,
            {
                "PyTorch's fully_shard ÷ the unsharded loop, world size 1": (
                    "data_parallel.plain_fsdp_over_plain_fp32"
                ),
                "hpo(gpus_per_trial=1), trials/s": "hpo.hpo_trials_per_s",
                "the same trials in a plain loop, trials/s": "hpo.plain_trials_per_s",
                "hpo() ÷ plain loop": "hpo.hpo_over_plain",
            },
        ),
    },
    "lab": {
        "first_run": lambda r: rows(
            r,
            ["the extension's view", "the widget view"],
            {
                f"{what}, {label}": (f"views.lab.{timing}.{key}", f"views.widget.{timing}.{key}")
                for what, key in (
                    ("first frame", "first_frame_s"),
                    ("over the kernel's websocket", "kernel_bytes"),
                    ("kernel read Busy", "busy_share"),
                )
                for timing, label in (
                    ("new_kernel", "new kernel"),
                    ("restart", "restart"),
                    ("idle_kernel", "idle kernel"),
                )
            }
            | {
                "frames/s while 2 trials stream": (
                    "views.lab.new_kernel.stream.frames_per_s",
                    "views.widget.new_kernel.stream.frames_per_s",
                ),
                "long tasks while streaming": (
                    "views.lab.new_kernel.stream.long_tasks",
                    "views.widget.new_kernel.stream.long_tasks",
                ),
                "longest": (
                    "views.lab.new_kernel.stream.long_task_max_s",
                    "views.widget.new_kernel.stream.long_task_max_s",
                ),
            },
        ),
        "open": lambda r: grid(
            r,
            {"Experiments panel": "scale.open.panel", "a reopened notebook's cell": "scale.open.cell"},
            {
                "table drawn": "table_s",
                "objective chart drawn": "objective_s",
                "curves drawn": "curves_s",
                "table rows in the page": "rows_in_page",
                "long tasks": "long_tasks",
                "longest": "long_task_max_s",
            },
        ),
        "open_many": lambda r: grid(
            r,
            {
                "Experiments panel": "scale.open_many.panel",
                "a reopened notebook's cell": "scale.open_many.cell",
            },
            {
                "table's first page": "table_s",
                "objective chart": "objective_s",
                "curves": "curves_s",
                "table rows in the page": "rows_in_page",
                "objective legend entries": "objective_legend_entries",
                "long tasks": "long_tasks",
                "longest": "long_task_max_s",
            },
        ),
        "live": lambda r: rows(
            r,
            ["the live view", "a blank page"],
            {
                "trials running": ("scale.live.running_trials_at_window_start", None),
                "reports stored/s": ("scale.live.reports_stored_per_s", None),
                "frames/s": ("scale.live.frames_per_s", "scale.live.blank_page_frames_per_s"),
                "long tasks": ("scale.live.long_tasks", "scale.live.blank_page_long_tasks"),
                "longest long task": ("scale.live.long_task_max_s", None),
                "browser main thread busy": (
                    "scale.live.main_thread_cpu_share",
                    "scale.live.blank_page_main_thread_cpu_share",
                ),
            },
        ),
    },
    "gateway": {
        "first": lambda r: rows(
            r,
            ["median", "each run", "÷ embedded"],
            {
                "embedded cluster": (
                    "first_trial_running_s.median.embedded",
                    "first_trial_running_s.all.embedded",
                    None,
                ),
                "Gateway, a new cluster": (
                    "first_trial_running_s.median.gateway_new",
                    "first_trial_running_s.all.gateway_new",
                    "ratios.gateway_new_vs_embedded",
                ),
                "Gateway, the cluster a kernel kept": (
                    "first_trial_running_s.median.gateway_reused",
                    "first_trial_running_s.all.gateway_reused",
                    "ratios.gateway_reused_vs_embedded",
                ),
            },
        ),
        "channel": lambda r: rows(
            r,
            ["dispatch trials/s", "reports/s delivered", "latency p50", "latency p99", "lost"],
            {
                **{
                    label: tuple(
                        f"channel.median.{side}.{k}"
                        for k in (
                            "dispatch_trials_per_s",
                            "stream_delivered_per_s",
                            "stream_p50_s",
                            "stream_p99_s",
                            "stream_lost",
                        )
                    )
                    for label, side in (
                        ("direct dask scheduler, tcp", "direct"),
                        ("through the gateway, TLS", "gateway"),
                    )
                },
                "gateway ÷ direct": (
                    "ratios.dispatch_gateway_vs_direct",
                    None,
                    "ratios.stream_p50_gateway_vs_direct",
                    None,
                    None,
                ),
            },
        ),
    },
    "network": {
        "median": lambda r: grid(
            r,
            each(r, "median"),
            {
                "dispatch trials/s": "dispatch_trials_per_s",
                "reports/s delivered": "stream_delivered_per_s",
                "latency p50": "stream_p50_s",
                "latency p99": "stream_p99_s",
                "lost": "stream_lost",
                "data-parallel samples/s": "ddp_2_ranks_samples_per_s",
            },
        ),
        "ratios": lambda r: grid(
            r,
            each(r, "ratios"),
            {
                "dispatch": "dispatch",
                "latency p50": "stream_p50",
                "data-parallel samples/s": "ddp_samples_per_s",
            },
        ),
    },
    "checkpoints": {
        "kill": lambda r: rows(
            r,
            ["steps executed", "hpo() wall, median", "resumed from step"],
            {
                "checkpoint() and restore()": (
                    "median.with.steps_executed",
                    "median.with.wall_s",
                    "all.with.0.resumed_from",
                ),
                "no checkpoints": ("median.without.steps_executed", "median.without.wall_s", None),
                "with ÷ without": ("ratios.steps_with_vs_without", "ratios.wall_with_vs_without", None),
            },
        ),
        "save": lambda r: grid(
            r,
            {
                f"saving every {s['every']} steps".replace("every 1 steps", "every step"): ("save_cost", i)
                for i, s in enumerate(r["save_cost"])
            },
            {
                "checkpoint": "checkpoint_mb",
                "a save": "save_s",
                "MB/s": "mb_per_s",
                "a step": "step_s",
                "saving's share of the step time": "share_of_step_time",
            },
        ),
    },
    "data_by_reference": {
        "main": lambda r: grid(
            r,
            {
                "the pickle with every trial task (scatter-threshold: null)": "pickled",
                "scattered automatically (the default threshold)": "automatic",
                "with_parameters(train, data=array)": "with_parameters",
            },
            {
                "wall, median": "by_way.{}.median_wall_s",
                "loopback traffic, median": "by_way.{}.median_loopback_gb",
                "pickled ÷ this: time": "ratios.{}.wall_pickled_over_this?",
                "pickled ÷ this: bytes": "ratios.{}.bytes_pickled_over_this?",
            },
        ),
        "idle": lambda r: pairs(
            r,
            {
                "loopback traffic of an idle machine, bytes/s (measured before the runs)": "idle_loopback_bytes_per_s"
            },
        ),
    },
    "summary": {
        "run": lambda r: grid(
            r,
            each(r, "results"),
            {
                "ran in this run": "ran_now",
                "finished": lambda d: _when(d["timestamp"]) if "timestamp" in d else d.get("error", "–"),
                "wall": "wall_s?",
                "target met": "met?",
                "run again since": _runs_since,
            },
        ),
        "figures": summary_figures,
    },
}
