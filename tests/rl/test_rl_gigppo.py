"""Perceptual hashes, nearest-sibling search and the GiGPPO critic (navrl.rl.gigppo)."""

from __future__ import annotations

import random

import imagehash
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageDraw

from navrl.rl.gigppo import (
    GiGPPOCritic,
    hamming64,
    hashes_to_tensor,
    nearest_sibling,
    nearest_sibling_grid,
    neighbour_features,
    phash64,
    popcount64,
    unpack_bits64,
    to_signed64,
    to_unsigned64,
)

U64 = (1 << 64) - 1


def screen(seed: int, size: tuple[int, int] = (180, 320)) -> Image.Image:
    """A deterministic fake phone screen: a header bar and a few list rows."""
    rng = random.Random(seed)
    im = Image.new("RGB", size, (250, 250, 250))
    d = ImageDraw.Draw(im)
    d.rectangle([0, 0, size[0], 40], fill=(rng.randint(0, 255), rng.randint(0, 255), rng.randint(0, 255)))
    for i in range(rng.randint(2, 6)):
        y = 60 + i * 45
        d.rectangle([10, y, rng.randint(60, 170), y + 30], fill=(rng.randint(0, 200),) * 3)
    return im


# ----------------------------------------------------------------------------------------
# hashes and bit tricks
# ----------------------------------------------------------------------------------------


def test_phash64_matches_imagehash_and_is_64_bit():
    for seed in range(5):
        im = screen(seed)
        h = phash64(im)
        assert 0 <= h <= U64
        assert f"{h:016x}" == str(imagehash.phash(im, hash_size=8))
    assert phash64(np.asarray(screen(1))) == phash64(screen(1))


def test_phash64_is_the_base_layers_hash():
    # the rollout records the hash from navrl.imaging; GiGPPO's name for it must be the same function
    from navrl import imaging
    assert phash64 is imaging.phash64


def test_identical_screenshots_in_sibling_rollouts_have_hamming_zero():
    a, b = screen(7), screen(7)  # two rollouts rendering the same screen: distinct objects
    assert a is not b and phash64(a) == phash64(b)
    hashes = hashes_to_tensor([phash64(screen(1)), phash64(a), phash64(screen(2)), phash64(b)])
    nbr, ham = nearest_sibling(
        hashes, torch.tensor([0, 0, 1, 1]), torch.zeros(4, dtype=torch.long), torch.ones(4, dtype=torch.bool)
    )
    assert nbr[1] == 3 and ham[1] == 0
    assert nbr[3] == 1 and ham[3] == 0
    # a different screen is far away, in the pHash sense
    assert int(hamming64(hashes[0], hashes[2])) > 0


def test_signed_unsigned_round_trip():
    for v in [0, 1, (1 << 63) - 1, 1 << 63, U64, 0xDEADBEEFCAFEBABE]:
        s = to_signed64(v)
        assert -(1 << 63) <= s < (1 << 63)
        assert to_unsigned64(s) == v
    with pytest.raises(ValueError):
        to_signed64(1 << 64)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, U64), min_size=1, max_size=30),
    st.lists(st.integers(0, U64), min_size=1, max_size=30),
)
def test_popcount_and_hamming_match_python(a, b):
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    ta, tb = hashes_to_tensor(a), hashes_to_tensor(b)
    assert popcount64(ta).tolist() == [bin(x).count("1") for x in a]
    assert hamming64(ta, tb).tolist() == [bin(x ^ y).count("1") for x, y in zip(a, b, strict=True)]


def test_unpack_bits64_least_significant_first_including_sign_bit():
    t = hashes_to_tensor([0b1011, 1 << 63, U64])
    bits = unpack_bits64(t)
    assert bits.shape == (3, 64) and bits.dtype == torch.uint8
    assert bits[0, :5].tolist() == [1, 1, 0, 1, 0] and int(bits[0].sum()) == 3
    assert bits[1].nonzero().flatten().tolist() == [63]
    assert int(bits[2].sum()) == 64


def test_popcount_extremes():
    t = hashes_to_tensor([0, U64, 1 << 63, 1, 0x5555555555555555, 0xAAAAAAAAAAAAAAAA])
    assert popcount64(t).tolist() == [0, 64, 1, 1, 32, 32]


# ----------------------------------------------------------------------------------------
# nearest sibling
# ----------------------------------------------------------------------------------------


def brute_force(hashes, traj, group, valid, steps):
    """O(N^2) reference with the documented tie rule (distance, trajectory id, step)."""
    n = len(hashes)
    nbr, ham = [-1] * n, [64] * n
    for i in range(n):
        if not valid[i]:
            continue
        best = None
        for j in range(n):
            if valid[j] and group[j] == group[i] and traj[j] != traj[i]:
                key = (bin((hashes[i] ^ hashes[j]) & U64).count("1"), traj[j], steps[j])
                if best is None or key < best[0]:
                    best = (key, j)
        if best is not None:
            nbr[i], ham[i] = best[1], best[0][0]
    return nbr, ham


@st.composite
def state_batches(draw):
    """Flat states of a few groups x trajectories x steps, hashes from a small pool (so
    distances tie often), in a random flat order with explicit step ids."""
    n_traj = draw(st.integers(1, 8))
    pool = draw(st.lists(st.integers(0, U64), min_size=1, max_size=6))
    rows = []
    for tr in range(n_traj):
        group = draw(st.integers(0, 2))
        tvalid = draw(st.booleans()) or draw(st.booleans())
        for step in range(draw(st.integers(1, 5))):
            h = draw(st.sampled_from(pool)) ^ (1 << draw(st.integers(0, 63))) * draw(st.integers(0, 1))
            rows.append((h, tr * 3 + 1, group, tvalid and draw(st.integers(0, 9)) > 0, step))
    order = draw(st.permutations(range(len(rows))))
    rows = [rows[i] for i in order]
    return [list(c) for c in zip(*rows, strict=True)]


@settings(max_examples=150, deadline=None)
@given(state_batches(), st.sampled_from([1 << 22, 7]))
def test_nearest_sibling_matches_brute_force(batch, chunk):
    hashes, traj, group, valid, steps = batch
    nbr, ham = nearest_sibling(
        hashes_to_tensor(hashes),
        torch.tensor(traj),
        torch.tensor(group),
        torch.tensor(valid),
        torch.tensor(steps),
        max_pairs_per_chunk=chunk,  # 7: forces one group per chunk
    )
    ref_nbr, ref_ham = brute_force(hashes, traj, group, valid, steps)
    assert nbr.tolist() == ref_nbr
    assert ham.tolist() == ref_ham


@settings(max_examples=100, deadline=None)
@given(state_batches())
def test_never_own_trajectory_never_invalid_always_same_group(batch):
    hashes, traj, group, valid, steps = batch
    nbr, ham = nearest_sibling(
        hashes_to_tensor(hashes),
        torch.tensor(traj),
        torch.tensor(group),
        torch.tensor(valid),
        torch.tensor(steps),
    )
    for i, j in enumerate(nbr.tolist()):
        if j < 0:
            assert ham[i] == 64
            # no valid state of another trajectory in the group, or i itself is not valid
            assert not valid[i] or not any(
                valid[k] and group[k] == group[i] and traj[k] != traj[i] for k in range(len(traj))
            )
        else:
            assert valid[i] and valid[j] and traj[j] != traj[i] and group[j] == group[i]
            assert ham[i] == bin((hashes[i] ^ hashes[j]) & U64).count("1")


def test_group_of_one_trajectory_gets_no_neighbour():
    hashes = torch.tensor([5, 5, 9, 5])
    nbr, ham = nearest_sibling(
        hashes, torch.tensor([0, 0, 0, 1]), torch.tensor([0, 0, 0, 1]), torch.ones(4, dtype=torch.bool)
    )
    # trajectory 0 is alone in group 0 (its own identical hashes do not count), 1 alone in 1
    assert nbr.tolist() == [-1, -1, -1, -1] and ham.tolist() == [64] * 4


def test_invalid_sibling_is_never_a_neighbour():
    hashes = torch.tensor([0, 0, 1])
    nbr, ham = nearest_sibling(
        hashes, torch.tensor([0, 1, 2]), torch.zeros(3, dtype=torch.long), torch.tensor([True, False, True])
    )
    assert nbr.tolist() == [2, -1, 0] and ham.tolist() == [1, 64, 1]


def test_ties_go_to_lowest_trajectory_then_earliest_step():
    # query (traj 5) at distance 1 from: traj 3 step 2, traj 1 step 4, traj 1 step 0 -> traj 1 step 0
    hashes = torch.tensor([0, 1, 1, 1, 3])
    traj = torch.tensor([5, 3, 1, 1, 1])
    steps = torch.tensor([0, 2, 4, 0, 1])
    nbr, ham = nearest_sibling(
        hashes, traj, torch.zeros(5, dtype=torch.long), torch.ones(5, dtype=torch.bool), steps
    )
    assert nbr[0] == 3 and ham[0] == 1
    # without step ids, flat order decides: index 2 comes before 3
    nbr, _ = nearest_sibling(hashes, traj, torch.zeros(5, dtype=torch.long), torch.ones(5, dtype=torch.bool))
    assert nbr[0] == 2


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 6), st.integers(1, 5), st.randoms(use_true_random=False))
def test_swapping_trajectory_order_changes_only_indices(n_traj, n_steps, rnd):
    """Reorder the trajectories (rows of a [B, T] grid): distances stay, neighbours map along.

    Hashes are drawn distinct per trajectory-step with distinct distances to each query
    being likely but not guaranteed, so neighbours are compared where the best is unique."""
    B, T = n_traj, n_steps
    hashes = torch.tensor([[to_signed64(rnd.getrandbits(64)) for _ in range(T)] for _ in range(B)])
    groups = torch.tensor([rnd.randint(0, 1) for _ in range(B)])
    lengths = [rnd.randint(1, T) for _ in range(B)]
    mask = torch.tensor([[t < n for t in range(T)] for n in lengths])
    valid = torch.tensor([rnd.random() > 0.2 for _ in range(B)])
    perm = list(range(B))
    rnd.shuffle(perm)
    p = torch.tensor(perm)  # new row r holds old row perm[r]
    nbr, ham = nearest_sibling_grid(hashes, groups, mask, valid)
    nbr2, ham2 = nearest_sibling_grid(hashes[p], groups[p], mask[p], valid[p])
    assert torch.equal(ham2, ham[p])
    flat_h = hashes.reshape(-1)
    for r in range(B):
        for t in range(T):
            j_old, j_new = int(nbr[perm[r], t]), int(nbr2[r, t])
            assert (j_old < 0) == (j_new < 0)
            if j_old < 0:
                continue
            # map the new flat index back to the old grid
            old_of_new = perm[j_new // T] * T + j_new % T
            d = ham[perm[r], t]
            q = flat_h[perm[r] * T + t]
            n_best = sum(
                1
                for b in range(B)
                for s in range(T)
                if b != perm[r]
                and groups[b] == groups[perm[r]]
                and valid[b]
                and mask[b, s]
                and int(hamming64(q, hashes[b, s])) == int(d)
            )
            if n_best == 1:
                assert old_of_new == j_old


def test_grid_indices_point_into_flattened_batch_and_skip_padding():
    hashes = torch.tensor([[1, 2, 0], [1, 99, 99], [2, 2, 2]])
    mask = torch.tensor([[True, True, False], [True, False, False], [True, True, True]])
    valid = torch.tensor([True, True, False])
    nbr, ham = nearest_sibling_grid(hashes, torch.zeros(3, dtype=torch.long), mask, valid)
    # row 0 step 0 (hash 1) -> row 1 step 0 (flat 3), d 0; row 0 step 1 (hash 2) -> flat 3, d 2
    assert nbr.tolist() == [[3, 3, -1], [0, -1, -1], [-1, -1, -1]]
    assert ham.tolist() == [[0, 2, 64], [0, 64, 64], [64, 64, 64]]


def test_cost_is_per_group_not_whole_batch():
    """Many groups of small size: a chunk never holds more than max_pairs_per_chunk pairs, so
    memory is bounded by the group size, not the batch size (256 groups x 240 states)."""
    G, K, T = 256, 8, 30
    n = G * K * T
    gen = torch.Generator().manual_seed(0)
    hashes = torch.randint(-(1 << 62), 1 << 62, (n,), generator=gen)
    traj = torch.arange(G * K).repeat_interleave(T)
    group = torch.arange(G).repeat_interleave(K * T)
    nbr, ham = nearest_sibling(
        hashes, traj, group, torch.ones(n, dtype=torch.bool), max_pairs_per_chunk=240 * 240
    )
    assert (nbr >= 0).all()
    assert (group[nbr] == group).all() and (traj[nbr] != traj).all()


# ----------------------------------------------------------------------------------------
# critic features and critic
# ----------------------------------------------------------------------------------------


def test_neighbour_features_layout():
    emb = torch.arange(8, dtype=torch.float32).view(4, 2)
    returns = torch.tensor([10.0, 20.0, 30.0, 40.0])
    nbr = torch.tensor([2, -1, 0, 2])
    ham = torch.tensor([16, 64, 16, 0])
    f = neighbour_features(emb, returns, nbr, ham)
    assert f.shape == (4, 2 * 2 + 3)
    assert f[0].tolist() == [0, 1, 4, 5, 30, 0.25, 0]
    assert f[1].tolist() == [2, 3, 0, 0, 0, 1.0, 1]  # no neighbour: zeros, G 0, 64/64, flag
    assert f[3].tolist() == [6, 7, 4, 5, 30, 0.0, 0]


def test_critic_never_sees_the_states_own_return():
    torch.manual_seed(0)
    critic = GiGPPOCritic(embed_dim=6, hidden_dim=16)
    emb = torch.randn(5, 6)
    returns = torch.randn(5, requires_grad=True)
    nbr = torch.tensor([1, 0, 0, -1, 1])
    ham = torch.tensor([3, 3, 10, 64, 0])
    v = critic(emb, returns, nbr, ham)
    assert v.shape == (5,)
    # V_2 depends on G_0 (its neighbour's return) only through data, and never on G_2 itself;
    # returns are detached inside, so nothing flows into them at all.
    v[2].backward()
    assert returns.grad is None or (returns.grad == 0).all()
    before = critic(emb, returns.detach(), nbr, ham)
    own_changed = returns.detach().clone()
    own_changed[2] += 100.0  # state 2 is nobody's neighbour
    after = critic(emb, own_changed, nbr, ham)
    assert torch.equal(before, after)
    nbr_changed = returns.detach().clone()
    nbr_changed[0] += 100.0  # the neighbour of states 1 and 2
    moved = critic(emb, nbr_changed, nbr, ham)
    assert not torch.equal(moved[2], before[2]) and torch.equal(moved[3], before[3])


def test_critic_forward_grid_ignores_padding_and_invalid_trajectories():
    torch.manual_seed(1)
    critic = GiGPPOCritic(embed_dim=4, hidden_dim=8)
    B, T = 4, 3
    emb = torch.randn(B, T, 4)
    G = torch.randn(B, T)
    hashes = torch.randint(0, 1 << 20, (B, T))
    groups = torch.tensor([0, 0, 0, 1])
    mask = torch.tensor([[1, 1, 0], [1, 1, 1], [1, 0, 0], [1, 1, 0]], dtype=torch.bool)
    valid = torch.tensor([True, True, False, True])
    v = critic.forward_grid(emb, G, hashes, groups, mask, valid)
    keep = mask & valid.unsqueeze(-1)
    junk = ~keep
    emb2 = emb.clone()
    emb2[junk] = float("nan")
    G2 = torch.where(junk, torch.full_like(G, float("nan")), G)
    hashes2 = torch.where(junk, torch.zeros_like(hashes), hashes)  # would be distance-0 magnets
    emb2.requires_grad_(True)
    v2 = critic.forward_grid(emb2, G2, hashes2, groups, mask, valid)
    assert torch.equal(v, v2)
    assert (v2[junk] == 0).all()
    v2.sum().backward()
    for p in critic.parameters():
        assert torch.isfinite(p.grad).all()


def test_critic_learns_from_an_identical_neighbour():
    """At distance 0 the neighbour's return is (here) exactly the target: the critic must learn
    to copy it, which a critic without the neighbour input cannot do (targets are random)."""
    torch.manual_seed(0)
    critic = GiGPPOCritic(embed_dim=8, hidden_dim=64)
    opt = torch.optim.Adam(critic.parameters(), lr=3e-3)
    emb = torch.randn(1, 8).expand(64, 8)  # every state looks the same to the embedding
    for _ in range(400):
        g = torch.randn(32)
        returns = torch.cat([g, g])  # pairs (i, i + 32) are the same screen in sibling rollouts
        nbr = torch.cat([torch.arange(32, 64), torch.arange(32)])
        v = critic(emb, returns, nbr, torch.zeros(64, dtype=torch.long))
        loss = ((v - returns) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.05
