import pytest


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray for the whole test session (its daemons share the machine's 2 cores)."""
    ray = pytest.importorskip("ray", reason="the Ray tests need the [scale] extra (make test installs it)")
    from nmmo.envs import distributed

    distributed.init(num_cpus=2)
    yield ray
    ray.shutdown()
