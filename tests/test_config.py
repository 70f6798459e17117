import pytest

import nmmo
from nmmo import config
from nmmo.config import ConfigError


def test_presets_match_the_design_table():
    small, medium, large = config.Small(), config.Medium(), config.Large()
    assert (small.MAP_CENTER, small.MAP_SIZE, small.PLAYER_N, small.HORIZON) == (32, 64, 64, 128)
    assert (medium.MAP_CENTER, medium.MAP_SIZE, medium.PLAYER_N, medium.HORIZON) == (128, 160, 256, 1024)
    assert (large.MAP_CENTER, large.MAP_SIZE, large.PLAYER_N, large.HORIZON) == (1024, 1056, 1024, 8192)
    assert config.Default.SYSTEMS == ("Resource", "Combat", "Progression", "NPC")
    assert config.Small.SYSTEMS == ()


def test_mixins_compose_and_enable_their_keys():
    class Conf(config.Small, config.Resource, config.Combat):
        pass

    conf = Conf()
    assert conf.has("Resource") and conf.has("Combat") and not conf.has("NPC")
    assert "COMBAT_MELEE_REACH" in conf.keys()
    assert "PROGRESSION_LEVEL_MAX" not in conf.keys()
    assert conf.set("COMBAT_MELEE_REACH", 2).COMBAT_MELEE_REACH == 2
    assert Conf().COMBAT_MELEE_REACH == 1  # set() changes the instance, not the class


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("PLAYER_NN", 3, r"unknown config key 'PLAYER_NN'.*Did you mean: PLAYER_N"),
        ("HORIZN", 3, r"Did you mean: HORIZON"),
        ("PLAYER_N", "12", r"PLAYER_N expects int, got '12' \(str\)"),
        ("PLAYER_N", 12.0, r"PLAYER_N expects int"),
        ("PLAYER_N", True, r"PLAYER_N expects int"),
        ("IMMORTAL", 1, r"IMMORTAL expects bool"),
        ("MAP_CENTER", -5, r"MAP_CENTER=-5 is out of range"),
        ("HORIZON", 0, r"HORIZON=0 is out of range"),
        ("MAP_WATER_THRESHOLD", float("nan"), r"finite"),
        ("MAP_SIZE", 100, r"MAP_SIZE is derived"),
        ("NPC_N", 3, r"belongs to the NPC system"),
        ("COMBAT_MELEE_REACH", 2, r"belongs to the Combat system, which Small does not enable"),
    ],
)
def test_set_rejects_bad_input_with_a_clear_message(key, value, message):
    conf = config.Small()
    before = conf.to_dict()
    with pytest.raises(ConfigError, match=message):
        conf.set(key, value)
    assert conf.to_dict() == before  # a rejected set changes nothing


def test_set_accepts_numpy_scalars_and_ints_for_floats():
    import numpy as np

    conf = config.Default().set("PLAYER_N", np.int64(12)).set("RESOURCE_REGEN_FRACTION", 1)
    assert conf.PLAYER_N == 12 and type(conf.PLAYER_N) is int
    assert conf.RESOURCE_REGEN_FRACTION == 1.0 and type(conf.RESOURCE_REGEN_FRACTION) is float


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"MAP_CENTER": 10}, r"smaller than the vision window"),
        ({"MAP_BORDER": 3}, r"MAP_BORDER=3 must exceed PLAYER_VISION_RADIUS=7"),
        ({"MAP_BORDER": 7}, r"MAP_BORDER=7 must exceed PLAYER_VISION_RADIUS=7: an agent that dies in the lava"),
        ({"PLAYER_N_OBS": 226}, r"PLAYER_N_OBS=226 exceeds the 225 tiles"),
        ({"PLAYER_TEAM_SIZE": 65}, r"PLAYER_TEAM_SIZE=65 exceeds PLAYER_N=64"),
        ({"PLAYER_SPAWN_ATTEMPTS": 4096, "HORIZON": 10**7}, r"agent ids \(possible_agents\) exceeds 4194304"),
        ({"PLAYER_N": 200}, r"PLAYER_N=200 exceeds the 124 spawn tiles"),
        ({"MAP_WATER_THRESHOLD": 0.8}, r"thresholds must satisfy"),
        ({"MAP_EVAL_SEED_OFFSET": 3}, r"disjoint"),
    ],
)
def test_validate_checks_keys_together(changes, message):
    conf = config.Small().update(changes)
    with pytest.raises(ConfigError, match=message):
        conf.validate()


@pytest.mark.parametrize(("key", "value"), [("HORIZON", 10**9), ("PLAYER_N_OBS", 10**9), ("NPC_N", 10**9),
                                            ("PROGRESSION_HARVEST_XP_SCALE", 10**12),
                                            ("COMBAT_MELEE_DAMAGE_SCALE", 2**40), ("RESOURCE_FOOD_DECAY", 2**33)])
def test_values_the_tables_cannot_hold_are_refused(key, value):
    conf = config.Default()
    with pytest.raises(ConfigError, match=rf"{key}={value} is out of range"):
        conf.set(key, value)


def test_large_xp_values_level_up_instead_of_overflowing():
    """The largest XP scale allowed, on the highest level: the product stays in int64, levels rise."""
    import nmmo

    conf = config.Default().set("PLAYER_N", 4).set("PROGRESSION_HARVEST_XP_SCALE", 10**6)
    env = nmmo.Env(conf, seed=0)
    env.reset()
    for _ in range(30):
        env.step({})
    ent = env.realm.state.entities
    assert (ent.level[:4] >= 1).all() and (ent.xp[:4] >= 0).all()


def test_npc_without_combat_is_an_error():
    class Conf(config.Small, config.NPC):
        pass

    with pytest.raises(ConfigError, match="NPCs need the Combat system"):
        Conf().validate()


def test_canonical_configs_load_by_name_and_path(tmp_path):
    names = config.available()
    for required in ("small_maps", "large_maps", "foraging", "team_play", "population_4", "domain_rand_1"):
        assert required in names
    small = config.load("small_maps")
    assert (small.MAP_CENTER, small.PLAYER_N, small.HORIZON) == (128, 256, 1024)
    assert small.SYSTEMS == ("Resource", "Combat", "Progression", "NPC")
    large = config.load("large_maps")
    assert (large.MAP_CENTER, large.PLAYER_N, large.HORIZON) == (1024, 1024, 8192)
    team = config.load("team_play")
    assert team.PLAYER_TEAM_SIZE == 4 and not team.COMBAT_FRIENDLY_FIRE and not team.has("NPC")
    # round trip through TOML text
    path = tmp_path / "mine.toml"
    path.write_text(team.to_toml())
    again = config.load(path)
    assert again.diff(team) == {} and again.SYSTEMS == team.SYSTEMS


def test_every_shipped_config_is_valid():
    for name in config.available():
        config.load(name).validate()


def test_load_errors_name_the_problem(tmp_path):
    with pytest.raises(ConfigError, match=r"no canonical config named 'smal_maps'.*Did you mean: small_maps"):
        config.load("smal_maps")
    bad = tmp_path / "bad.toml"
    bad.write_text('preset = "Small"\n[keys]\nPLAYER_NX = 3\n')
    with pytest.raises(ConfigError, match=r"bad.toml: unknown config key 'PLAYER_NX'"):
        config.load(bad)
    bad.write_text('preset = "Huge"\n')
    with pytest.raises(ConfigError, match=r"unknown preset 'Huge'"):
        config.load(bad)
    bad.write_text("preset = \n")
    with pytest.raises(ConfigError, match=r"not valid TOML"):
        config.load(bad)
    with pytest.raises(ConfigError, match=r"does not exist"):
        config.load(tmp_path / "missing.toml")


def test_diff_and_print():
    a, b = config.load("small_maps"), config.load("foraging")
    diff = a.diff(b)
    assert diff["COMBAT_MELEE_REACH"] == (1, None)
    assert "MAP_CENTER" not in diff
    text = str(a)
    assert "PLAYER_N = 256" in text and 'preset = "Medium"' in text


def test_resolve_accepts_names_instances_and_presets():
    assert config.resolve(None).SYSTEMS == config.Default.SYSTEMS
    assert isinstance(config.resolve("Small"), config.Small)
    conf = config.Small()
    assert config.resolve(conf) is conf
    assert nmmo.config.resolve("small_maps").PLAYER_N == 256


def test_attribute_typos_and_values_assigned_directly_are_caught():
    conf = config.Small()
    with pytest.raises(ConfigError, match="unknown config key 'HORIZN'.*HORIZON"):
        conf.HORIZN = 8
    conf.PLAYER_N = -3  # plain attribute assignment: checked when the config is validated
    with pytest.raises(ConfigError, match="PLAYER_N=-3 is out of range"):
        conf.validate()
    conf.PLAYER_N = "8"
    with pytest.raises(ConfigError, match="PLAYER_N"):
        conf.validate()


def test_levels_and_danger_bands_must_be_consistent():
    class AllSmall(config.Small, config.Resource, config.Combat, config.Progression, config.NPC):
        pass

    with pytest.raises(ConfigError, match="PROGRESSION_RESOURCE_BASE_LEVEL=10 exceeds PROGRESSION_LEVEL_MAX=5"):
        AllSmall().set("PROGRESSION_LEVEL_MAX", 5).validate()
    with pytest.raises(ConfigError, match="NPC_NEUTRAL_DANGER=0.9 exceeds NPC_HOSTILE_DANGER=0.8"):
        AllSmall().set("NPC_NEUTRAL_DANGER", 0.9).validate()
