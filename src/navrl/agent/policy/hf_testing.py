"""Tiny, randomly initialised Hugging Face models that work offline (tests, smoke runs).

:func:`tiny_test_model` writes a directory that :class:`navrl.agent.policy.hf.HFPlanner`
loads exactly like a real checkpoint (``from_pretrained(path, local_files_only=True)``):

* ``kind="qwen2_vl"``: a Qwen2-VL (``Qwen2VLForConditionalGeneration``) with a 2-layer,
  64-wide language model and a 1-block, 32-wide vision tower, a Qwen2-VL image processor
  capped at 16 merged image tokens per screenshot, and a Qwen-style chat template;
* ``kind="causal"``: a 2-layer, 64-wide Qwen2 causal LM with the same tokenizer/template.

The tokenizer is a byte-level BPE trained here with ``tokenizers`` on the planner's system
text and a few phone-world prompts and wrapped in ``PreTrainedTokenizerFast`` — no download.
No processor is saved for the VLM: ``Qwen2VLProcessor`` cannot be built without
torchvision (its video processor needs it), and :class:`HFPlanner` does not need one for
the Qwen-VL family (it expands the image placeholder itself from the image processor's
``image_grid_thw``).
"""
from __future__ import annotations

from pathlib import Path

QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                 "<|image_pad|>", "<|video_pad|>"]

# Qwen2-VL's chat template, reduced to what the planner sends (system text + image + text).
QWEN_CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for c in message['content'] %}"
    "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _corpus() -> list[str]:
    from navrl.agent.planner import PlannerContext
    from navrl.agent.prompt import SYSTEM, build_prompt
    from navrl.tasks.registry import get_suite
    texts = [SYSTEM]
    for task in get_suite("train").tasks(4, 0):
        dev = task.make_device()
        obs = dev.observe()
        texts.append(build_prompt(PlannerContext(task, obs)))
        texts.append(task.expert_step(obs, dev, []))
    return texts


def tiny_tokenizer(vocab_size: int = 640):
    """A Qwen-style byte-level BPE tokenizer (PreTrainedTokenizerFast) with the chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=QWEN_SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(_corpus(), trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   chat_template=QWEN_CHAT_TEMPLATE, padding_side="left")


def tiny_test_model(tmp_path: str | Path, kind: str = "qwen2_vl", seed: int = 0, hidden: int = 64,
                    layers: int = 2) -> Path:
    """Build, save and return the directory of a tiny random model of ``kind``.

    Args:
        tmp_path: parent directory; the model goes to ``tmp_path / f"tiny-{kind}"``.
        kind: ``"qwen2_vl"`` (vision-language) or ``"causal"`` (text-only Qwen2).
        seed: torch seed of the random initialisation.
        hidden, layers: width and depth of the language model.
    """
    import torch
    from transformers import GenerationConfig

    out = Path(tmp_path) / f"tiny-{kind}"
    out.mkdir(parents=True, exist_ok=True)
    tok = tiny_tokenizer()
    ids = {s: tok.convert_tokens_to_ids(s) for s in QWEN_SPECIALS}
    text = dict(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"],
                pad_token_id=ids["<|endoftext|>"], tie_word_embeddings=False)
    torch.manual_seed(seed)
    if kind == "qwen2_vl":
        from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLImageProcessorPil
        half = hidden // 4 // 2                      # rotary pairs per head, split over (t, h, w)
        t = max(1, half // 4)
        h = (half - t) // 2
        cfg = Qwen2VLConfig(
            text_config={**text, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                                      "mrope_section": [t, h, half - t - h]}},
            vision_config=dict(depth=1, embed_dim=32, hidden_size=hidden, num_heads=2, mlp_ratio=2, patch_size=14,
                               spatial_merge_size=2, temporal_patch_size=2),
            image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
            vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
            tie_word_embeddings=False)
        model = Qwen2VLForConditionalGeneration(cfg)
        # 28x28 pixels per merged token: at most 16 image tokens per screenshot
        Qwen2VLImageProcessorPil(min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 16).save_pretrained(out)
    elif kind == "causal":
        from transformers import Qwen2Config, Qwen2ForCausalLM
        model = Qwen2ForCausalLM(Qwen2Config(**text))
    else:
        raise ValueError(f"unknown tiny model kind {kind!r}; use 'qwen2_vl' or 'causal'")
    model.generation_config = GenerationConfig(bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"],
                                               pad_token_id=ids["<|endoftext|>"])
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out
