"""Value head and the last-prompt-token reader (navrl.rl.value_head)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from navrl.rl.value_head import ValueHead, last_prompt_token_hidden


def positions_as_hidden(B: int, L: int) -> torch.Tensor:
    """hidden[b, l] = [b, l]: reading the result tells which position was picked."""
    b = torch.arange(B).view(B, 1).expand(B, L)
    pos = torch.arange(L).view(1, L).expand(B, L)
    return torch.stack([b, pos], dim=-1).float()


def test_right_padding_with_prompt_lengths():
    h = positions_as_hidden(3, 6)
    out = last_prompt_token_hidden(h, prompt_lengths=torch.tensor([1, 3, 6]), padding_side="right")
    assert out.tolist() == [[0, 0], [1, 2], [2, 5]]


def test_left_padding_with_prompt_lengths_and_attention_mask():
    # rows: [pad pad P P O O], [P P P P O pad], [pad pad pad pad P O]
    mask = torch.tensor([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0], [0, 0, 0, 0, 1, 1]])
    h = positions_as_hidden(3, 6)
    out = last_prompt_token_hidden(
        h, prompt_lengths=torch.tensor([2, 4, 1]), attention_mask=mask, padding_side="left"
    )
    assert out.tolist() == [[0, 3], [1, 3], [2, 4]]


def test_prompt_only_rows_from_attention_mask_either_side():
    h = positions_as_hidden(2, 5)
    right = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    left = torch.tensor([[0, 0, 1, 1, 1], [0, 1, 1, 1, 1]])
    assert last_prompt_token_hidden(h, attention_mask=right).tolist() == [[0, 2], [1, 4]]
    assert last_prompt_token_hidden(h, attention_mask=left, padding_side="left").tolist() == [[0, 4], [1, 4]]


def test_errors():
    h = torch.zeros(2, 4, 3)
    with pytest.raises(ValueError):
        last_prompt_token_hidden(h)
    with pytest.raises(ValueError):
        last_prompt_token_hidden(h, prompt_lengths=torch.tensor([1, 2]), padding_side="left")
    with pytest.raises(ValueError):
        last_prompt_token_hidden(h, prompt_lengths=torch.tensor([0, 2]))
    with pytest.raises(ValueError):
        last_prompt_token_hidden(h, prompt_lengths=torch.tensor([5, 2]))
    with pytest.raises(ValueError):
        last_prompt_token_hidden(h, prompt_lengths=torch.tensor([1, 2]), padding_side="middle")
    with pytest.raises(ValueError):
        last_prompt_token_hidden(h, attention_mask=torch.tensor([[1, 1, 0, 0], [0, 0, 0, 0]]))


class TinyCausalLM(nn.Module):
    """One causal self-attention layer: the hidden state at position l sees tokens <= l only."""

    def __init__(self, vocab: int = 11, dim: int = 16) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(32, dim)
        self.layer = nn.TransformerEncoderLayer(
            dim, nhead=2, dim_feedforward=32, batch_first=True, dropout=0.0
        )

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        L = ids.shape[1]
        x = self.emb(ids) + self.pos(torch.arange(L))
        causal = nn.Transformer.generate_square_subsequent_mask(L)
        return self.layer(x, src_mask=causal, is_causal=True)


def test_value_cannot_see_the_output_it_judges():
    torch.manual_seed(0)
    lm, head = TinyCausalLM().eval(), ValueHead(16)
    prompt = torch.tensor([[3, 1, 4, 1]])
    with torch.no_grad():
        values = []
        for output in ([5, 9, 2], [6, 5, 3], [0, 0, 0]):
            ids = torch.cat([prompt, torch.tensor([output])], dim=1)
            h = last_prompt_token_hidden(lm(ids), prompt_lengths=torch.tensor([4]))
            values.append(head(h))
        assert torch.equal(values[0], values[1]) and torch.equal(values[0], values[2])
        # ...while reading one position later would see the output
        h_late = [lm(torch.cat([prompt, torch.tensor([o])], 1))[:, 4] for o in ([5, 9, 2], [6, 5, 3])]
        assert not torch.equal(head(h_late[0]), head(h_late[1]))


def test_value_head_shapes_and_dtype():
    head = ValueHead(8)
    assert head(torch.randn(2, 5, 8)).shape == (2, 5)
    out = head(torch.randn(3, 8, dtype=torch.bfloat16))
    assert out.shape == (3,) and out.dtype == torch.float32
    assert torch.equal(head.proj.bias, torch.zeros(1))
