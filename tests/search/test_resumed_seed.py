"""A resumed seeded search goes on from where it was, on the real LocalCluster: it proposes new points, not the
first run's again, and does so the same way every time."""

from jupyter_dist import space


def score(x=0.0):
    return {"v": x}


def test_a_resumed_seeded_search_proposes_new_points_reproducibly(run_hpo):
    searched = {"x": space.uniform(0, 1)}
    xs = []
    for name in ("first", "again"):
        run_hpo(score, searched, trials=3, metric="v", seed=7, pruner=None, parallel=1, name=name)
        resumed = run_hpo(
            score, searched, trials=6, metric="v", seed=7, pruner=None, parallel=1, name=name, resume=True
        )
        xs.append([t.params_x for t in resumed.trials.itertuples()])
    assert len(set(xs[0])) == 6  # the resumed run's 3 points are new
    assert xs[0] == xs[1]  # and seeded: the same run resumed the same way proposes the same points
