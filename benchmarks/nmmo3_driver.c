/* Times PufferLib 3.0.0's NMMO3 (pufferlib/ocean/nmmo3/nmmo3.h) stepping with random actions.
 *
 * Built and run by benchmarks/bench_nmmo3.py, which fetches the pufferlib==3.0.0 sdist and compiles
 *     gcc -O3 -DNDEBUG -fwrapv -std=gnu11 -I SDIST/pufferlib/ocean/nmmo3 \
 *         -I SDIST/raylib-5.5_linux_amd64/include -ffunction-sections -fdata-sections -Wl,--gc-sections \
 *         benchmarks/nmmo3_driver.c -o nmmo3_driver -lm
 * (-DNDEBUG -fwrapv as Python's CFLAGS give PufferLib's own extension build.) No raylib library is
 * linked: the header's render code is never called, and --gc-sections drops it with its references.
 *
 * Usage: nmmo3_driver TICKS [WARMUP] [SEED] [ACTIONS] [PLAYERS] [ENEMIES]
 *   ACTIONS: actions are drawn uniformly from 0..ACTIONS-1: 26, the default, is the whole action space
 *   (a random policy); 5 is the four moves and the no-op. PLAYERS and ENEMIES default to 1024 and 2048.
 *
 * The env is initialised as pufferlib/ocean/nmmo3/nmmo3.py's NMMO3 defaults initialise one env
 * (binding.c's my_init + env_binding.h's env_init, then c_reset): a 512x512 map, 1024 players, 2048
 * enemies, observations (11*15*10 + 47 + 10 = 1707 bytes a player) built by every c_step. Actions are
 * drawn from a fixed-seed xorshift generator before the timed region (the env's own rand() stream
 * stays as the binding leaves it: srand(seed) before init and reset). Prints `key value` lines.
 */
#define _GNU_SOURCE
#include "nmmo3.h"

#include <stdint.h>

static double seconds(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static uint64_t xorshift64(uint64_t* state) {
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s TICKS [WARMUP] [SEED] [ACTIONS] [PLAYERS] [ENEMIES]\n", argv[0]);
        return 2;
    }
    long ticks = atol(argv[1]);
    long warmup = argc > 2 ? atol(argv[2]) : 10;
    int seed = argc > 3 ? atoi(argv[3]) : 0;
    int n_actions = argc > 4 ? atoi(argv[4]) : 26;
    int num_players = argc > 5 ? atoi(argv[5]) : 1024;
    int num_enemies = argc > 6 ? atoi(argv[6]) : 2048;
    if (ticks < 1 || warmup < 0 || n_actions < 1 || n_actions > 26 || num_players < 1 || num_enemies < 0) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }

    /* nmmo3.py's NMMO3.__init__ defaults, one env (players and enemies from the command line) */
    MMO env = {0};
    env.width = 512;
    env.height = 512;
    env.num_players = num_players;
    env.num_enemies = num_enemies;
    env.num_resources = 2048;
    env.num_weapons = 1024;
    env.num_gems = 512;
    env.tiers = 5;
    env.levels = 40;
    env.teleportitis_prob = 0.001f;
    env.enemy_respawn_ticks = 2;
    env.item_respawn_ticks = 100;
    env.x_window = 7;
    env.y_window = 5;
    env.reward_combat_level = 1.0f;
    env.reward_prof_level = 1.0f;
    env.reward_item_level = 0.5f;
    env.reward_market = 0.01f;
    env.reward_death = -1.0f;

    double start = seconds(CLOCK_MONOTONIC);
    srand(seed);
    allocate_mmo(&env); /* observations, rewards, terminals, actions, then init() */
    srand(seed);
    c_reset(&env);
    double reset_s = seconds(CLOCK_MONOTONIC) - start;

    int players = env.num_players;
    long total = warmup + ticks;
    int* cache = malloc(sizeof(int) * (size_t)players * (size_t)total);
    if (cache == NULL) {
        fprintf(stderr, "out of memory for %ld ticks of actions\n", total);
        return 1;
    }
    uint64_t state = 0x9E3779B97F4A7C15ull ^ (uint64_t)(seed + 1);
    for (long i = 0; i < (long)players * total; i++) {
        cache[i] = (int)(xorshift64(&state) % (uint64_t)n_actions);
    }
    int* own_actions = env.actions;

    for (long t = 0; t < warmup; t++) {
        env.actions = cache + t * players;
        c_step(&env);
    }
    double wall = seconds(CLOCK_MONOTONIC);
    double cpu = seconds(CLOCK_PROCESS_CPUTIME_ID);
    for (long t = warmup; t < total; t++) {
        env.actions = cache + t * players;
        c_step(&env);
    }
    cpu = seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu;
    wall = seconds(CLOCK_MONOTONIC) - wall;

    /* a checksum of the last observations, so the work cannot be optimised away */
    unsigned long checksum = 0;
    size_t obs_bytes = (size_t)players * (11 * 15 * 10 + 47 + 10);
    for (size_t i = 0; i < obs_bytes; i++) {
        checksum = checksum * 31 + env.observations[i];
    }
    env.actions = own_actions;
    free(cache);

    printf("players %d\n", players);
    printf("enemies %d\n", env.num_enemies);
    printf("ticks %ld\n", ticks);
    printf("obs_bytes_per_player %d\n", 11 * 15 * 10 + 47 + 10);
    printf("reset_s %.6f\n", reset_s);
    printf("wall_s %.6f\n", wall);
    printf("cpu_s %.6f\n", cpu);
    printf("agent_steps %ld\n", (long)players * ticks);
    printf("agent_steps_per_s %.1f\n", players * ticks / wall);
    printf("agent_steps_per_cpu_s %.1f\n", players * ticks / cpu);
    printf("ms_per_tick %.4f\n", 1e3 * wall / ticks);
    printf("checksum %lu\n", checksum);
    free_allocated_mmo(&env);
    return 0;
}
