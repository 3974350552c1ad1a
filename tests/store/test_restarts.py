"""An elastic job's regroup, as its record keeps it (store/_restarts.py): the checkpoint it says the job went on
from is the one the new group's restore() found.

The record is a real InMemoryRecord journalled to a real store, filled through its TrialSink methods in the order
the trial loop calls them when a rank 0 cut off from the cluster saved a checkpoint (to the folder every host
shares) whose news went down with its link: tests/multihost/test_hosts.py meets this when the cut lands between
the save and its message leaving the host.
"""

import jupyter_dist as jd
from jupyter_dist.protocol import CheckpointEvent, ExperimentState, Objective, Regrouped, ReportBatch
from jupyter_dist.store import ExperimentDefinition, InMemoryRecord, Journal


def regrouped_job(tmp_path, restored_step: int):
    """A two-rank job heard of up to step 12, with its checkpoint of step 10; rank 1 lost, it goes on alone and
    restores ``restored_step``."""
    store = str(tmp_path / "s.sqlite")
    definition = ExperimentDefinition("ddp", "cut", Objective("loss"))
    record = InMemoryRecord(definition, Journal(store, definition, {}, name_given=True))
    record.trial_started(0, {}, {})
    record.trial_began(0)
    record.reports_arrived(
        ReportBatch(0, "a", [[step, {"loss": 1.0 / (step + 1)}, 1.0] for step in range(13)])
    )
    record.checkpoint_arrived(CheckpointEvent(0, "a", 10, "/shared/step-10", resumed=False))
    record.trial_regrouped(Regrouped(0, "rank 1 (worker tcp://10.0.0.2:4000) lost", [1], 2, 1, from_step=10))
    said = dict(record.trial(0).restarts[-1])
    record.checkpoint_arrived(
        CheckpointEvent(0, "b", restored_step, f"/shared/step-{restored_step}", resumed=True)
    )
    return store, record, said


def test_a_regroup_that_restored_a_checkpoint_the_kernel_never_heard_of_says_the_one_it_went_on_from(
    tmp_path,
):
    store, record, said = regrouped_job(tmp_path, restored_step=15)
    assert said["from_step"] == 10 and said["message"].endswith("from step 10")  # as the kernel knew it then
    (restart,) = record.trial(0).restarts
    # The job got to step 15 at least (it saved it), so no step was redone.
    assert (restart["from_step"], restart["lost_at"], restart["steps_redone"]) == (15, 15, 0), restart
    assert (
        restart["message"]
        == "rank 1 (worker tcp://10.0.0.2:4000) lost at step 15: continuing on 1 rank from step 15"
    )
    # The next attempt's note in the trial's output says it the same way, and so does the store.
    assert f"--- attempt 2 ({restart['message']}) ---" in record.trial(0).logs
    record.finish(ExperimentState.COMPLETED)
    assert jd.load("cut", store=store).restarts.from_step.tolist() == [15]


def test_a_regroup_that_restored_the_checkpoint_it_named_is_kept_as_it_was_said(tmp_path):
    _, record, said = regrouped_job(tmp_path, restored_step=10)
    (restart,) = record.trial(0).restarts
    assert restart == said and (restart["lost_at"], restart["steps_redone"]) == (12, 2), restart
    # A later checkpoint of the same attempt changes nothing of it.
    record.checkpoint_arrived(CheckpointEvent(0, "b", 15, "/shared/step-15", resumed=False))
    assert record.trial(0).restarts == [said]
