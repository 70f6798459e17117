import math

import pytest
import trueskill

from evaluation.rating import ANCHOR, BETA, Ratings, ranks_from_scores, skill_rating, sr_scale, win_probability


def test_library_defaults_and_beta():
    assert BETA == pytest.approx(25 / 6)
    env = Ratings(["a", ANCHOR]).env
    assert (env.mu, env.sigma, env.beta) == (25.0, pytest.approx(25 / 3), pytest.approx(25 / 6))
    assert sr_scale() == pytest.approx(100 / (1.645 * math.sqrt(2) * 25 / 6))


def test_100_sr_gap_is_a_95_percent_win_probability():
    gap = 100 / sr_scale()  # mu difference worth 100 SR
    strong, weak = trueskill.Rating(mu=25 + gap, sigma=0.01), trueskill.Rating(mu=25, sigma=0.01)
    assert skill_rating(strong.mu, weak.mu) - skill_rating(weak.mu, weak.mu) == pytest.approx(100)
    assert win_probability(strong, weak) == pytest.approx(0.95, abs=2e-4)
    # the same number from trueskill's own normal CDF and the TrueSkill formula
    denominator = math.sqrt(2 * BETA**2 + strong.sigma**2 + weak.sigma**2)
    assert trueskill.global_env().cdf((strong.mu - weak.mu) / denominator) == pytest.approx(0.95, abs=2e-4)
    # large sigma pulls the probability toward a coin flip
    assert 0.5 < win_probability(trueskill.Rating(25 + gap, 8), trueskill.Rating(25, 8)) < 0.8


def test_combat_anchor_is_exactly_1500_and_intervals_follow_sigma():
    ratings = Ratings(["winner", "loser", ANCHOR])
    for _ in range(5):
        ratings.update([0, 2, 1])
    sr = ratings.sr()
    assert sr[ANCHOR] == 1500.0
    assert sr["winner"] > 1500 > sr["loser"]
    k = sr_scale()
    for row in ratings.table():
        assert row["ci_high"] - row["sr"] == pytest.approx(1.96 * k * row["sigma"])
        assert row["sr"] - row["ci_low"] == pytest.approx(1.96 * k * row["sigma"])
    with pytest.raises(ValueError, match="anchor"):
        Ratings(["a", "b"])
    with pytest.raises(ValueError, match="expected 3 ranks"):
        ratings.update([0, 1])


def test_ranks_share_equal_scores_and_leave_out_missing_ones():
    assert ranks_from_scores([3.0, 5.0, 3.0, 1.0]) == [1, 0, 1, 3]  # equal scores are draws
    assert ranks_from_scores([0.0, 0.0, 0.0]) == [0, 0, 0]
    assert ranks_from_scores([None, 0.0, float("nan")]) == [None, 0, None]  # did not play: not ranked
    # a tie-break orders equal scores; equal in both is still a draw
    assert ranks_from_scores([(2.0, 10.0), (2.0, 30.0), (7.0, 1.0), (2.0, 10.0)]) == [2, 1, 0, 2]
    assert ranks_from_scores([(1.0, float("nan")), (1.0, 3.0)]) == [None, 0]
    # deterministic: the same input always gives the same ranks and the same ratings
    a, b = Ratings(["x", "y", ANCHOR]), Ratings(["x", "y", ANCHOR])
    for scores in ([1.0, 1.0, 0.0], [0.0, 2.0, 2.0]):
        a.update(ranks_from_scores(scores))
        b.update(ranks_from_scores(scores))
    assert a.table() == b.table()


def test_draws_update_symmetrically():
    ratings = Ratings(["a", ANCHOR])
    ratings.update(ranks_from_scores([1.0, 1.0]))
    assert ratings.sr()["a"] == pytest.approx(1500.0)


def test_a_policy_that_did_not_play_keeps_its_rating():
    ratings = Ratings(["a", "b", ANCHOR])
    ratings.update([None, 0, 1])
    a, b, anchor = ratings.ratings
    assert (a.mu, a.sigma) == (25.0, 25.0 / 3) and b.mu > 25.0 > anchor.mu
    ratings.update([0, None, None])  # nobody to compare with: nothing changes
    assert ratings.ratings[0].mu == 25.0
