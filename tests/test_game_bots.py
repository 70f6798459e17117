"""The minigames' scripted team bots (`scripted.games`) are yardsticks: in a small tournament on the
game's canonical config each beats `random` (its teams win at least 80 % of the episodes) and
`idle`; and ``--game NAME`` on the commands (`nmmo.cli.add_game_flags`, `baselines.args.Args.game`).

The runs are deterministic (a fixed run seed and deal secret, held-out maps 0..4). Horizons are cut
where the game allows (`TICKS`): the random and idle teams starve within about 25 ticks, after which
the battle games' bots win by having the most members alive; king of the hill's holder at the
horizon wins. (Before the games cleared the lines through the centre, `nmmo.games.centre.open_centre`,
race and hill could not be won on held-out map 3, whose centre tile is stone; now every bot wins all
five episodes here.)
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from baselines.args import Args, args_from
from evaluation.tournament import run_tournament
from nmmo import config
from nmmo.cli import build_parser, main
from nmmo.config.checks import GAME_NAMES
from nmmo.core.enums import EntityAttr, Style
from nmmo.policy import load_policy_class
from scripted.core import Batch
from scripted.games import GAME_BOTS

EPISODES = 5
#: Ticks per episode (None: the config's HORIZON; a race ends when a team reaches the centre).
TICKS = {"race_to_centre": None, "king_of_the_hill": 64, "team_battle": 32, "protect_the_king": 32, "sandwich": 40}


def play(game: str, opponent: str) -> dict:
    bot = GAME_BOTS[game]
    return run_tournament(game, [bot, opponent], episodes=EPISODES, ticks=TICKS[game], seed=0, workers=0,
                          progress=False, metric="win", secret=1, anchor=bot)


def episodes_won(results: dict, policy: str) -> int:
    """Episodes in which one of the policy's teams is among the winners."""
    return sum(episode["metrics"][policy]["win"]["mean"] > 0 for episode in results["episodes"])


def test_every_game_has_a_bot_reachable_as_a_spec():
    assert tuple(GAME_BOTS) == GAME_NAMES
    for game, spec in GAME_BOTS.items():
        assert callable(load_policy_class(spec)(config.resolve(game)).act_arrays)


@pytest.mark.parametrize("game", GAME_NAMES)
def test_the_bot_beats_random(game):
    results = play(game, "random")
    won = episodes_won(results, GAME_BOTS[game])
    assert won >= 0.8 * EPISODES, f"{GAME_BOTS[game]} won {won} of {EPISODES} episodes of {game} against random"
    assert results["leaderboard"][0]["policy"] == GAME_BOTS[game]


@pytest.mark.parametrize("game", GAME_NAMES)
def test_the_bot_beats_idle(game):
    results = play(game, "idle")
    bot = GAME_BOTS[game]
    assert episodes_won(results, bot) > episodes_won(results, "idle")
    assert [row["policy"] for row in results["leaderboard"]] == [bot, "idle"]


# ---------------------------------------------------------------- --game on the commands
def test_tournament_game_sets_the_config_metric_and_anchor(tmp_path):
    out = tmp_path / "tour"
    assert main(["tournament", "--game", "race_to_centre", "--policies", "random", "--episodes", "1", "--ticks", "4",
                 "--workers", "0", "--secret", "1", "--out", str(out), "--quiet"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["settings"]["metric"] == "win" and results["settings"]["anchor"] == "scripted:Racer"
    assert results["policies"] == ["random", "scripted:Racer"]
    assert 'GAME = "race_to_centre"' in results["config"]["toml"]


def test_game_and_config_must_agree(capsys):
    assert main(["run", "--game", "team_battle", "--config", "Small", "--ticks", "2"]) == 2
    assert "--game team_battle" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # argparse lists the games
        main(["eval", "--game", "hill", "--policy", "random"])
    assert "king_of_the_hill" in capsys.readouterr().err


def test_train_game_is_its_config():
    parser = build_parser()
    assert args_from(parser.parse_args(["train", "--game", "sandwich"])).config == "sandwich"
    assert args_from(parser.parse_args(["train", "--game", "sandwich", "--preset", "small"])).config == "sandwich"
    with pytest.raises(ValueError, match="--game sandwich"):
        args_from(parser.parse_args(["train", "--game", "sandwich", "--config", "small_maps"]))
    assert Args(game="team_battle").config == "team_battle"
    with pytest.raises(ValueError, match="not a minigame"):
        Args(game="hill")
    assert "GAME_ADAPTIVE" in parser._subparsers._group_actions[0].choices["train"].format_help()


# ---------------------------------------------------------------- the bots' own strikes
def test_strike_picks_the_weakest_foe_in_reach_from_int32_observations():
    """`GameBot.strike` on observation-dtype (int32) Entity rows: it once ranked targets with an int64
    sentinel that numpy 2 wrapped to -1 beside int32 scores, so it picked an empty row and no bot
    ever struck a foe."""
    conf = config.resolve("team_battle")
    bot = load_policy_class(GAME_BOTS["team_battle"])(conf)
    n_obs, reach = conf.PLAYER_N_OBS, conf.COMBAT_RANGE_REACH
    entity = np.zeros((2, n_obs, len(EntityAttr)), dtype=np.int32)
    # agent 1 (team 0) at (20, 20): a healthy foe beside it, a weaker foe at range reach, a team-mate
    # weaker still, and a weaker foe out of reach; agent 2 (team 0) sees nobody.
    for row, (ident, team, r, c, health) in enumerate([(1, 0, 20, 20, 10), (9, 1, 20, 21, 9),
                                                       (10, 1, 20, 20 + reach, 4), (2, 0, 21, 20, 1),
                                                       (11, 1, 20, 30, 1)]):
        entity[0, row, [EntityAttr.ID, EntityAttr.TEAM, EntityAttr.ROW, EntityAttr.COL, EntityAttr.HEALTH]] = (
            ident, team, r, c, health)
    entity[1, 0, [EntityAttr.ID, EntityAttr.TEAM, EntityAttr.ROW, EntityAttr.COL, EntityAttr.HEALTH]] = (3, 0, 5, 5, 10)
    target_mask = np.zeros((2, n_obs + 1), dtype=bool)
    target_mask[0, [1, 2, 3]] = True  # the far foe is not a valid target (out of every reach)
    target_mask[:, n_obs] = True
    batch = Batch(ids=[1, 2], material=np.zeros((2, 1, 1)), occupied=np.zeros((2, 1, 1), bool),
                  rows=np.zeros((2, 1, 1)), cols=np.zeros((2, 1, 1)), entity=entity,
                  move_mask=np.ones((2, 5), bool), style_mask=np.ones((2, 3), bool), target_mask=target_mask)
    rows = np.full((2, 3), -1)
    struck = bot.strike(batch, rows, bot.foes(batch))
    assert struck.tolist() == [True, False]
    assert rows[0, 2] == 2 and rows[0, 1] == Style.RANGE  # the weaker foe, with the style that reaches it
    assert rows[1].tolist() == [-1, -1, -1]
