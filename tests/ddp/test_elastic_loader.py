"""A prepared DataLoader across a change of world size: ElasticSampler deals the rest of an epoch among the ranks
there are now, ShardedLoader saves and restores where it is in its epoch, checkpoint()/restore() carry that for the
trial's loaders, and a data-parallel run preempted mid-epoch goes on with one rank fewer, each sample of the epoch
seen once."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import jupyter_dist as jd
from jupyter_dist.checkpoints._save import LOADERS, WHOLE, _read
from jupyter_dist.ddp._loader import ShardedLoader
from jupyter_dist.ddp._sampler import ElasticSampler
from jupyter_dist.trials._trial_context import TrialContext, activate, forget_experiment

CPU = torch.device("cpu")


def numbered(samples: int, batch_size: int, shuffle: bool = True, drop_last: bool = False) -> DataLoader:
    """A DataLoader whose samples are their own indices."""
    return DataLoader(
        TensorDataset(torch.arange(samples)), batch_size=batch_size, shuffle=shuffle, drop_last=drop_last
    )


def ranks_of(loader: DataLoader, world: int) -> list[ShardedLoader]:
    return [ShardedLoader(loader, CPU, num_replicas=world, rank=r) for r in range(world)]


def take(loader: ShardedLoader, batches: int | None = None) -> tuple[list[int], object]:
    """The indices of the loader's next ``batches`` (all, when None), and its pass, left open as a training loop
    body leaves it while it checkpoints."""
    it = iter(loader)
    seen = [int(i) for (batch,) in itertools.islice(it, batches) for i in batch]
    return seen, it


def epoch_order(samples: int, epoch: int, shuffle: bool = True) -> list[int]:
    """The epoch's global order, as DistributedSampler makes it."""
    if not shuffle:
        return list(range(samples))
    return torch.randperm(samples, generator=torch.Generator().manual_seed(epoch)).tolist()


# --- ElasticSampler ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("drop_last", [True, False])
@pytest.mark.parametrize("samples", [12, 13, 2])
def test_from_the_start_it_deals_exactly_as_distributed_sampler(shuffle, drop_last, samples):
    dataset = list(range(samples))
    for rank in range(3):
        ours = ElasticSampler(dataset, num_replicas=3, rank=rank, shuffle=shuffle, drop_last=drop_last)
        torchs = DistributedSampler(dataset, num_replicas=3, rank=rank, shuffle=shuffle, drop_last=drop_last)
        for epoch in (0, 1):
            ours.set_epoch(epoch)
            torchs.set_epoch(epoch)
            assert list(ours) == list(torchs)
            assert len(ours) == len(torchs)


def test_consumed_out_of_range_is_refused():
    sampler = ElasticSampler(list(range(5)), num_replicas=2, rank=0)
    with pytest.raises(jd.ArgumentError, match="consumed=6"):
        sampler.set_position(0, 6)


# --- across a change of world size ------------------------------------------------------------------------
def test_three_ranks_then_two_see_the_epoch_exactly_once():
    # 3 ranks x 6 batches, 2 of them seen; 24 left for 2 ranks: no padding either side.
    samples, batch_size, batches = 36, 2, 2
    source = numbered(samples, batch_size)
    three = ranks_of(source, 3)
    before = [take(loader, batches) for loader in three]
    states = [loader.state_dict() for loader in three]
    assert states == [{"epoch": 0, "consumed": batches * batch_size * 3}] * 3

    two = ranks_of(source, 2)
    for loader in two:
        loader.load_state_dict(states[0])
        assert len(loader) == (samples - 12) // (2 * batch_size)  # what remains of the epoch, in batches
    after = [take(loader)[0] for loader in two]

    order = epoch_order(samples, 0)
    first = sorted(i for seen, _ in before for i in seen)
    assert first == sorted(order[:12])  # dealt round-robin: the order's start, whichever ranks took it
    everything = first + [i for seen in after for i in seen]
    assert sorted(everything) == list(range(samples))  # none twice, none missing

    # The next pass is the next epoch, whole, at the new world size.
    for rank, loader in enumerate(two):
        assert len(loader) == samples // (2 * batch_size)
        expected = DistributedSampler(range(samples), num_replicas=2, rank=rank)
        expected.set_epoch(1)
        assert take(loader)[0] == list(expected)


def test_a_resumed_epoch_pads_what_remains_and_names_the_padded_ranks():
    samples, batch_size = 22, 2
    source = numbered(samples, batch_size)
    two = ranks_of(source, 2)
    passes = [take(loader, 2) for loader in two]  # 8 of 22 seen; 14 remain for 3 ranks: one repeat
    before = [seen for seen, _open in passes]
    state = two[0].state_dict()
    assert state["consumed"] == 8

    three = ranks_of(source, 3)
    for loader in three:
        loader.load_state_dict(state)
    padded = three[0].padded_ranks
    assert padded == range(2, 3)  # 14 % 3 = 2: rank 2's last sample repeats
    assert all(loader.padded_ranks == padded for loader in three)
    after = [take(loader)[0] for loader in three]
    assert [len(seen) for seen in after] == [5, 5, 5]
    remaining = epoch_order(samples, 0)[8:]
    assert after[2][-1] == remaining[0]  # padding repeats the start of what remained
    kept = [i for rank, seen in enumerate(after) for i in (seen[:-1] if rank in padded else seen)]
    assert sorted(kept) == sorted(remaining)
    assert sorted([*itertools.chain(*before), *kept]) == list(range(samples))

    # Once the resumed pass is over, a whole epoch of 22 on 3 ranks pads from 22 % 3 = 1 on.
    assert three[0].padded_ranks == range(1, 3)


def test_the_final_batch_of_a_resumed_pass_is_marked_for_gather_for_metrics():
    from jupyter_dist.ddp._context import run

    loader = ShardedLoader(numbered(10, 2, shuffle=False), CPU, num_replicas=2, rank=1)
    # 6 left: 3 each, in batches of 2 and 1.
    loader.load_state_dict({"epoch": 0, "consumed": 4})
    marked = [run.final_batch_of is loader for _ in loader]
    assert marked == [False, True]
    assert run.final_batch_of is None


# --- ShardedLoader's state --------------------------------------------------------------------------------
def test_the_state_follows_the_passes():
    loader = ShardedLoader(numbered(10, 2, shuffle=False), CPU, num_replicas=2, rank=0)  # 3 batches a pass
    assert loader.state_dict() == {"epoch": 0, "consumed": 0}
    _, it = take(loader, 1)
    assert loader.state_dict() == {"epoch": 0, "consumed": 4}
    next(it), next(it)  # the final batch, being trained on: all of the epoch counts (the padding not twice)
    assert loader.state_dict() == {"epoch": 0, "consumed": 10}
    assert next(it, None) is None
    assert loader.state_dict() == {"epoch": 1, "consumed": 0}  # the pass is over: the next starts epoch 1

    for _batch in loader:  # a loop that breaks off: the next pass, as without a restart, is the next epoch
        break
    assert loader.state_dict() == {"epoch": 2, "consumed": 0}


@pytest.mark.parametrize("drop_last", [True, False])
def test_a_state_loaded_resumes_once_then_passes_go_on_normally(drop_last):
    source = numbered(21, 2, drop_last=drop_last)
    saved = ShardedLoader(source, CPU)  # outside a trial: rank 0 of 1
    _, _open = take(saved, 3)
    state = saved.state_dict()
    assert state == {"epoch": 0, "consumed": 6}

    loader = ShardedLoader(source, CPU)
    loader.load_state_dict(state)
    assert len(loader) == (7 if drop_last else 8)  # 15 left, in batches of 2
    rest, _ = take(loader)
    assert rest == epoch_order(21, 0)[6 : 20 if drop_last else 21]
    assert loader.state_dict() == {"epoch": 1, "consumed": 0}
    assert len(loader) == (10 if drop_last else 11)
    assert take(loader)[0] == epoch_order(21, 1)[: 20 if drop_last else 21]


@pytest.mark.parametrize("drop_last", [True, False])
def test_saved_on_an_epochs_final_batch_it_resumes_that_epochs_empty_end_then_the_next_epoch(drop_last):
    # The loop body that checkpointed was on the final batch: restarted, the user's loop finishes that epoch's
    # (empty) rest, and its next epoch is the loader's next.
    saved = ShardedLoader(numbered(7, 2, drop_last=drop_last), CPU)
    _, _open = take(saved, len(saved))  # 3 batches, or 4 with a last one of 1
    state = saved.state_dict()
    assert state == {"epoch": 0, "consumed": 6 if drop_last else 7}

    loader = ShardedLoader(numbered(7, 2, drop_last=drop_last), CPU)
    loader.load_state_dict(state)
    assert len(loader) == 0 and take(loader)[0] == []
    assert take(loader)[0] == epoch_order(7, 1)[: 6 if drop_last else 7]


# --- checkpoint() and restore() carry the trial's loaders -------------------------------------------------
@pytest.fixture
def attempt(tmp_path):
    """Make a trial attempt of this thread's (a real TrialContext), checkpointing to tmp_path, as a worker does."""
    made = []

    def start():
        ctx = TrialContext("exp-elastic-loader", 0, f"a{len(made)}", "topic", lambda topic, msg: None)
        ctx.checkpoint_dir, ctx.keep_checkpoints = str(tmp_path / "trial"), 2
        activate(ctx)
        made.append(ctx)
        return ctx

    yield start
    activate(None)
    forget_experiment("exp-elastic-loader")


def test_checkpoint_saves_the_trials_loaders_and_restore_gives_them_back(attempt):
    attempt()
    first, second = ShardedLoader(numbered(20, 2), CPU), ShardedLoader(numbered(8, 4, shuffle=False), CPU)
    seen, _open = take(first, 3)
    take(second)  # a finished pass: the next is its epoch 1
    folder = jd.checkpoint(3, {"step": 3})
    assert _read(f"{folder}/{WHOLE}")[LOADERS] == [{"epoch": 0, "consumed": 6}, {"epoch": 1, "consumed": 0}]

    attempt()  # the job starts again: the loaders are prepared anew
    early = ShardedLoader(numbered(20, 2), CPU)  # prepared before restore(): given its place by restore()
    restored = jd.restore({})
    assert restored.state == {"step": 3}  # the loaders' positions are not the user's values
    late = ShardedLoader(numbered(8, 4, shuffle=False), CPU)  # prepared after: takes its place when made
    assert sorted(seen + take(early)[0]) == list(range(20))
    assert late.state_dict()["epoch"] == 1

    activate(None)  # the notebook loads the checkpoint: no loaders there, and no LOADERS in what it gets
    assert jd.restore({}, path=folder).state == {"step": 3}


def test_a_loader_put_in_the_state_is_restored_too(attempt):
    attempt()
    loader = ShardedLoader(numbered(12, 3), CPU)
    seen, _open = take(loader, 2)
    jd.checkpoint(0, {"loader": loader})

    attempt()
    again = ShardedLoader(numbered(12, 3), CPU)
    restored = jd.restore({"loader": again})
    assert restored.state == {"loader": again}
    assert sorted(seen + take(again)[0]) == list(range(12))


def test_a_checkpoint_without_loaders_restores_as_before(attempt):
    attempt()
    folder = jd.checkpoint(1, {"step": 1})  # no loader prepared: the file holds only the user's values
    assert _read(f"{folder}/{WHOLE}") == {"step": 1}
    attempt()
    loader = ShardedLoader(numbered(4, 2, shuffle=False), CPU)
    assert jd.restore({}).state == {"step": 1}
    assert loader.state_dict() == {"epoch": 0, "consumed": 0}


def test_the_reserved_key_is_refused_in_the_users_state(attempt):
    attempt()
    with pytest.raises(jd.ArgumentError, match=LOADERS):
        jd.checkpoint(0, {LOADERS: 1})


# --- on the cluster: preempted mid-epoch on 2 ranks, resumed on 1 -----------------------------------------
SAMPLES, BATCH = 24, 2  # 2 ranks: 6 batches each an epoch


def record_samples(out, epochs=2, checkpoint_at=None, fail_at=None):
    """Train on nothing: write down each step's sample indices, per world size and rank. A sharded (FSDP) run
    also names the loader in its state, which then goes through torch.distributed.checkpoint."""
    model = jd.prepare(torch.nn.Linear(1, 1))
    loader = jd.prepare(DataLoader(TensorDataset(torch.arange(SAMPLES)), batch_size=BATCH, shuffle=True))
    sharded = any(hasattr(p, "full_tensor") for p in model.parameters())
    state = {"model": model, "loader": loader} if sharded else {"model": model}
    restored = jd.restore(state)
    step = restored.state["step"] + 1 if restored else 0
    start = restored.state["epoch"] if restored else 0
    with open(Path(out) / f"world{jd.world_size()}-rank{jd.rank()}.txt", "w") as log:
        for epoch in range(start, epochs):
            for (indices,) in loader:
                print(epoch, step, *indices.tolist(), file=log, flush=True)
                if step == checkpoint_at:
                    jd.checkpoint(step, {**state, "step": step, "epoch": epoch})
                if step == fail_at:  # every rank, after the checkpoint: the job was preempted
                    raise RuntimeError("preempted")
                step += 1


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_a_run_preempted_mid_epoch_resumes_on_one_rank_seeing_each_sample_once(run_ddp, tmp_path, strategy):
    seen = tmp_path / "seen"
    seen.mkdir()
    options = dict(name="elastic-loader", out=str(seen), strategy=strategy, checkpoint_dir=tmp_path)
    with pytest.raises(jd.ExperimentFailed, match="RuntimeError: preempted"):
        run_ddp(record_samples, workers=2, checkpoint_at=2, fail_at=4, **options)
    if strategy == "fsdp":  # the loader's state went through torch.distributed.checkpoint, with the model's
        assert list(tmp_path.rglob("*.distcp"))
    run_ddp(record_samples, workers=1, resume=True, **options)

    def lines(name):
        return [[int(n) for n in line.split()] for line in (seen / name).read_text().splitlines()]

    checkpointed = [line for rank in (0, 1) for line in lines(f"world2-rank{rank}.txt") if line[1] <= 2]
    after = lines("world1-rank0.txt")
    epoch0 = [i for line in checkpointed + after if line[0] == 0 for i in line[2:]]
    assert sorted(epoch0) == list(range(SAMPLES))  # steps 3-4, trained but not checkpointed, come again
    assert [i for line in after if line[0] == 0 for i in line[2:]] == epoch_order(SAMPLES, 0)[12:]
    assert [i for line in after if line[0] == 1 for i in line[2:]] == epoch_order(SAMPLES, 1)
    # On from the checkpoint's step: 6 batches left of epoch 0, then 12 of epoch 1.
    assert [line[1] for line in after] == list(range(3, 3 + 6 + 12))
