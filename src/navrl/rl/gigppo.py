"""GiGPPO: a critic that borrows signal from the nearest state of a sibling rollout (docs/design.md §5c).

Each state is paired with its closest state among the *valid* sibling trajectories of the same
task group (never its own trajectory), by the Hamming distance between 64-bit perceptual hashes
of the screenshots. A small MLP then predicts V(s_t) from

    [embedding(s_t), embedding(neighbour), neighbour's return G, distance / 64, no-neighbour flag]

with zeros, G = 0, distance 64 and flag = 1 where no neighbour exists. The state's own reward or
return is never an input, so the value target cannot leak into the prediction. The distance
tells the critic how far to trust the neighbour's return: at 0 it is the same screen.

Hash representation: a 64-bit hash is an unsigned integer in [0, 2^64), which does not fit in
int64. Tensors hold it as the signed int64 with the same bits (two's complement: values >= 2^63
become value - 2^64, see :func:`to_signed64`). XOR and popcount only look at bits, so the
Hamming distance is the same either way.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

# the screenshot hash lives with the core types (the rollout records it too); re-exported here
# because GiGPPO callers have always imported it from this module
from navrl.imaging import phash64

__all__ = [
    "HASH_BITS",
    "phash64",
    "to_signed64",
    "to_unsigned64",
    "hashes_to_tensor",
    "popcount64",
    "hamming64",
    "unpack_bits64",
    "nearest_sibling",
    "nearest_sibling_grid",
    "neighbour_features",
    "GiGPPOCritic",
]

HASH_BITS = 64
_MASK32 = 0xFFFFFFFF


def to_signed64(value: int) -> int:
    """Unsigned 64-bit int -> the int64 with the same bits (two's complement)."""
    if not -(1 << 63) <= value < (1 << 64):
        raise ValueError(f"{value} does not fit in 64 bits")
    return value - (1 << 64) if value >= (1 << 63) else value


def to_unsigned64(value: int) -> int:
    """int64 -> the unsigned 64-bit int with the same bits (inverse of :func:`to_signed64`)."""
    return value & ((1 << 64) - 1)


def hashes_to_tensor(hashes: Sequence[int], device: torch.device | str | None = None) -> Tensor:
    """Python hashes (unsigned or signed 64-bit) -> int64 tensor [N] (two's complement)."""
    return torch.tensor([to_signed64(int(h)) for h in hashes], dtype=torch.long, device=device)


def _popcount32(v: Tensor) -> Tensor:
    # SWAR popcount of values in [0, 2^32) held in int64: no intermediate leaves [0, 2^57),
    # so there is no signed overflow.
    v = v - ((v >> 1) & 0x55555555)
    v = (v & 0x33333333) + ((v >> 2) & 0x33333333)
    v = (v + (v >> 4)) & 0x0F0F0F0F
    return ((v * 0x01010101) & _MASK32) >> 24


def popcount64(x: Tensor) -> Tensor:
    """Number of set bits of each int64 (all 64 bits, the sign bit included).

    Works on the two 32-bit halves separately (torch has no popcount op, and the 64-bit SWAR
    trick would need unsigned wrap-around that int64 does not promise).

    Args:
        x: long [...].
    Returns:
        long [...] in [0, 64].
    """
    x = x.long()
    return _popcount32(x & _MASK32) + _popcount32((x >> 32) & _MASK32)


def unpack_bits64(x: Tensor) -> Tensor:
    """Bits of int64-held hashes, least significant first. long [...] -> uint8 [..., 64]."""
    shifts = torch.arange(HASH_BITS, device=x.device)
    # Arithmetic shift of the sign bit still leaves bit 63 in position 0, so & 1 is right for all.
    return ((x.long().unsqueeze(-1) >> shifts) & 1).to(torch.uint8)


def hamming64(a: Tensor, b: Tensor) -> Tensor:
    """Hamming distance between int64-held 64-bit hashes (broadcasting). long [...] in [0, 64]."""
    return popcount64(torch.bitwise_xor(a.long(), b.long()))


@torch.no_grad()
def nearest_sibling(
    hashes: Tensor,
    traj_ids: Tensor,
    group_ids: Tensor,
    valid: Tensor,
    step_ids: Tensor | None = None,
    *,
    max_pairs_per_chunk: int = 1 << 20,
) -> tuple[Tensor, Tensor]:
    """For each state, the closest state of another valid trajectory of the same task group.

    Candidates of state i: states j with ``valid[j]``, ``group_ids[j] == group_ids[i]`` and
    ``traj_ids[j] != traj_ids[i]``. The one with the smallest Hamming distance wins; ties go to
    the lowest trajectory id, then the earliest step. Step order is ``step_ids`` when given,
    otherwise the flat index order (i.e. states of one trajectory are assumed to be listed in
    step order, as in a row-major flattening of a [B, T] grid). Invalid states (``valid`` False:
    padding, masked trajectories) are never candidates and get no neighbour themselves.

    Cost: the pairwise distances are computed per group (a [G, M, M] block, M = largest group
    size in states, processed in chunks of groups), so time and memory grow linearly in the
    number of groups, never quadratically in the batch.

    Args:
        hashes: long [N] 64-bit hashes held as int64 (see module docstring).
        traj_ids: long [N] trajectory id of each state.
        group_ids: long [N] task group id of each state.
        valid: bool [N] usable states.
        step_ids: long [N] step index within the trajectory (optional, see above).
        max_pairs_per_chunk: upper bound on pairs materialised at once (memory knob).
    Returns:
        (neighbour_index long [N] into the N states, -1 where there is none;
         hamming long [N] in [0, 64], 64 where there is none).
    """
    n = hashes.numel()
    device = hashes.device
    neighbour = torch.full((n,), -1, dtype=torch.long, device=device)
    hamming = torch.full((n,), HASH_BITS, dtype=torch.long, device=device)
    idx = valid.bool().nonzero(as_tuple=True)[0]
    if idx.numel() < 2:
        return neighbour, hamming

    # Order the valid states by (group, trajectory, step) with stable sorts, least significant
    # key first; the position of a state inside its group is then its tie-break rank.
    order = step_ids.long()[idx] if step_ids is not None else idx
    idx = idx[torch.argsort(order, stable=True)]
    idx = idx[torch.argsort(traj_ids.long()[idx], stable=True)]
    idx = idx[torch.argsort(group_ids.long()[idx], stable=True)]

    _, counts = torch.unique_consecutive(group_ids.long()[idx], return_counts=True)
    num_groups, m = int(counts.numel()), int(counts.max().item())
    group_of = torch.repeat_interleave(torch.arange(num_groups, device=device), counts)
    starts = torch.cumsum(counts, 0) - counts
    pos = torch.arange(idx.numel(), device=device) - starts[group_of]

    # Pad every group to m slots: [G, m] tables of hash, trajectory, original index.
    pad_h = torch.zeros((num_groups, m), dtype=torch.long, device=device)
    pad_traj = torch.zeros((num_groups, m), dtype=torch.long, device=device)
    pad_orig = torch.full((num_groups, m), -1, dtype=torch.long, device=device)
    real = torch.zeros((num_groups, m), dtype=torch.bool, device=device)
    pad_h[group_of, pos] = hashes.long()[idx]
    pad_traj[group_of, pos] = traj_ids.long()[idx]
    pad_orig[group_of, pos] = idx
    real[group_of, pos] = True

    # Pairwise Hamming distances per group as a batched matrix product of unpacked bits:
    #   popcount(a XOR b) = popcount(a) + popcount(b) - 2 * popcount(a AND b),
    # with popcount(a AND b) = <bits(a), bits(b)>. The [G, m, m] XOR + SWAR popcount of
    # hamming64() gives the same numbers (tested) but makes ~30 elementwise passes; one bmm is
    # ~5x faster. All values are integers far below 2^24, so float32 is exact (float64 beyond).
    key_dtype = torch.float32 if (HASH_BITS + 2) * m < (1 << 24) else torch.float64
    bits = unpack_bits64(pad_h).to(key_dtype)  # [G, m, 64]
    ones = bits.sum(-1)  # [G, m] popcount of each hash
    rank = torch.arange(m, device=device, dtype=key_dtype)
    no_candidate = float((HASH_BITS + 1) * m)  # larger than any ham * m + rank
    chunk = max(1, max_pairs_per_chunk // (m * m))
    for g0 in range(0, num_groups, chunk):
        sl = slice(g0, min(num_groups, g0 + chunk))
        b, pc, tr, rl = bits[sl], ones[sl], pad_traj[sl], real[sl]
        # [c, m(query), m(candidate)]
        dist = torch.baddbmm(pc.unsqueeze(2) + pc.unsqueeze(1), b, b.transpose(1, 2), alpha=-2.0)
        # One number orders by distance, then by rank (trajectory id, then step): ties resolved
        # without relying on argmin's tie behaviour.
        key = dist.mul_(m).add_(rank)
        not_cand = ~rl.unsqueeze(1) | (tr.unsqueeze(2) == tr.unsqueeze(1))
        best = key.masked_fill_(not_cand, no_candidate).amin(dim=2).long()  # [c, m]
        found = rl & (best < no_candidate)
        q_orig = pad_orig[sl][found]
        g_local = found.nonzero(as_tuple=True)[0]
        neighbour[q_orig] = pad_orig[sl][g_local, best[found] % m]
        hamming[q_orig] = best[found] // m
    return neighbour, hamming


@torch.no_grad()
def nearest_sibling_grid(
    hashes: Tensor, group_ids: Tensor, step_mask: Tensor, valid: Tensor
) -> tuple[Tensor, Tensor]:
    """:func:`nearest_sibling` on a padded batch; indices point into the flattened [B * T] grid.

    Args:
        hashes: long [B, T] screenshot hashes of s_t (anything on padding).
        group_ids: long [B]; step_mask: bool [B, T]; valid: bool [B].
    Returns:
        (neighbour_index long [B, T] into ``x.reshape(B * T, ...)``, -1 where none;
         hamming long [B, T], 64 where none).
    """
    B, T = hashes.shape
    device = hashes.device
    traj = torch.arange(B, device=device).repeat_interleave(T)
    steps = torch.arange(T, device=device).repeat(B)
    usable = (step_mask.bool() & valid.bool().unsqueeze(-1)).reshape(-1)
    nbr, ham = nearest_sibling(hashes.reshape(-1), traj, group_ids.long().repeat_interleave(T), usable, steps)
    return nbr.view(B, T), ham.view(B, T)


def neighbour_features(
    state_emb: Tensor, returns: Tensor, neighbour_index: Tensor, hamming: Tensor
) -> Tensor:
    """Critic input rows [emb(s), emb(neighbour), G_neighbour, distance / 64, no-neighbour flag].

    Only the neighbour's return is gathered; state i's own ``returns[i]`` is never used for
    row i (it is used only as the neighbour return of other states). Returns are detached: they
    are data, not something to backpropagate into.

    Args:
        state_emb: float [N, D] embeddings of the N states.
        returns: float [N] return G of each state.
        neighbour_index: long [N] from :func:`nearest_sibling`, -1 where none.
        hamming: long [N] from :func:`nearest_sibling`.
    Returns:
        float [N, 2 * D + 3]; where there is no neighbour: zero embedding, G = 0, distance 1
        (= 64 / 64) and flag 1.
    """
    has = neighbour_index >= 0
    safe = neighbour_index.clamp(min=0)
    dtype = state_emb.dtype
    zero = torch.zeros((), dtype=dtype, device=state_emb.device)
    n_emb = torch.where(has.unsqueeze(-1), state_emb[safe], zero)
    n_ret = torch.where(has, returns.detach().to(dtype)[safe], zero)
    dist = torch.where(
        has, hamming.to(dtype) / HASH_BITS, torch.ones((), dtype=dtype, device=state_emb.device)
    )
    flag = (~has).to(dtype)
    return torch.cat([state_emb, n_emb, n_ret.unsqueeze(-1), dist.unsqueeze(-1), flag.unsqueeze(-1)], dim=-1)


class GiGPPOCritic(nn.Module):
    """Small MLP value network V(s_t | nearest sibling state).

    Embeddings are layer-normalised first (LM hidden states have arbitrary scale), then the
    neighbour features are gathered (:func:`neighbour_features`) and fed to an MLP.

    Args:
        embed_dim: D, size of a state embedding (e.g. the planner's last-prompt-token hidden
            state, detached, or any screen encoder's output).
        hidden_dim: width of the MLP.
        num_layers: number of hidden layers (>= 1).
    """

    def __init__(self, embed_dim: int, hidden_dim: int = 256, num_layers: int = 2) -> None:
        super().__init__()
        if num_layers < 1:
            raise ValueError("num_layers must be >= 1")
        self.embed_dim = embed_dim
        self.norm = nn.LayerNorm(embed_dim)
        layers: list[nn.Module] = []
        width = 2 * embed_dim + 3
        for _ in range(num_layers):
            layers += [nn.Linear(width, hidden_dim), nn.GELU()]
            width = hidden_dim
        layers.append(nn.Linear(width, 1))
        self.mlp = nn.Sequential(*layers)

    def forward(self, state_emb: Tensor, returns: Tensor, neighbour_index: Tensor, hamming: Tensor) -> Tensor:
        """V for N states.

        Args:
            state_emb: float [N, D]; returns: float [N] (only neighbours' entries are read);
            neighbour_index: long [N]; hamming: long [N] (from :func:`nearest_sibling`).
        Returns:
            float [N] values.
        """
        features = neighbour_features(self.norm(state_emb), returns, neighbour_index, hamming)
        return self.mlp(features).squeeze(-1)

    def forward_grid(
        self,
        state_emb: Tensor,
        returns: Tensor,
        hashes: Tensor,
        group_ids: Tensor,
        step_mask: Tensor,
        valid: Tensor,
    ) -> Tensor:
        """V on a padded batch: neighbour search + features + MLP in one call.

        Args:
            state_emb: float [B, T, D]; returns: float [B, T] (G from discounted_returns);
            hashes: long [B, T]; group_ids: long [B]; step_mask: bool [B, T]; valid: bool [B].
        Returns:
            float [B, T] values, 0 on padding and in invalid trajectories.
        """
        B, T, D = state_emb.shape
        mask = step_mask.bool() & valid.bool().unsqueeze(-1)
        # Zero the unused rows first: garbage (even NaN) there would otherwise reach the weight
        # gradients through 0 * NaN in the backward pass.
        state_emb = torch.where(
            mask.unsqueeze(-1), state_emb, torch.zeros((), dtype=state_emb.dtype, device=state_emb.device)
        )
        returns = torch.where(mask, returns, torch.zeros((), dtype=returns.dtype, device=returns.device))
        nbr, ham = nearest_sibling_grid(hashes, group_ids, step_mask, valid)
        v = self.forward(
            state_emb.reshape(B * T, D), returns.reshape(B * T), nbr.reshape(-1), ham.reshape(-1)
        )
        return torch.where(mask, v.view(B, T), torch.zeros((), dtype=v.dtype, device=v.device))
