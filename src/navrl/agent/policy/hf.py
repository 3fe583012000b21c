"""The Hugging Face planner: any ``transformers`` causal LM or Qwen-VL-class vision-language
model as a trainable :class:`~navrl.agent.policy.base.Policy`, with optional LoRA (``peft``).

Prompt: :data:`navrl.agent.prompt.SYSTEM` as the system turn and
:func:`navrl.agent.prompt.build_prompt` as the user turn, through the tokenizer's chat
template; a VLM also gets the screenshot as an image (downscaled so its longer side is at
most ``HFPlannerConfig.image_max_side``).

Prompt keys and the image cache
-------------------------------
The trainer re-scores rollouts from the prompt *strings* it recorded (``Step.prompt``), but
a VLM's prompt is text **and** an image. So for a VLM, :meth:`HFPlanner.prompt_text` (and
``plan``) return a *prompt key*::

    <navrl-image:0123456789abcdef01234567>
    Task: ...the build_prompt text...

The first line names the screenshot by a content hash (BLAKE2b-96 of the downscaled image's
pixels); the image itself is kept by the policy in an :class:`ImageCache` — an in-memory LRU
of PNG bytes (``image_cache_size`` entries) and, when ``image_store`` is set, a
content-addressed PNG directory that survives restarts. :meth:`HFPlanner.score` parses the
key and looks the image up; a missing image raises :class:`MissingImageError` (never a silent
text-only score). Text-only models (and ``use_image=False``) use the plain prompt text.
The cache is shared, not copied, by ``copy.deepcopy`` (the trainer's reference policy).

Log-probs
---------
``plan`` samples (``policy.sample = True``, at ``policy.temperature``) or decodes greedily
with ``model.generate`` and records, for every generated token, its log-probability under
the distribution it was drawn from, log softmax(logits / temperature) (untempered when
greedy) — what ``score(..., temperature=T)`` recomputes with gradients, as verl does and
the same convention as the tiny planner; PPO therefore trains the policy that was sampled.
The log-probs are taken from the raw logits by a logits processor that runs before any
sampling warper; top-k/top-p/repetition penalties are off, so tokens are drawn from
softmax(logits / temperature) exactly.

Image input is implemented for the Qwen-VL family (Qwen2-VL, Qwen2.5-VL, Qwen3-VL and any
model whose processor expands one ``image_token_id`` placeholder to
``image_grid_thw.prod() / merge_size**2`` tokens): the planner expands the placeholder
itself from the image processor's output, so it needs only the tokenizer and the image
processor (no torchvision-dependent video processor). Other VLMs run text-only with
``use_image=False``.
"""
from __future__ import annotations

import hashlib
import inspect
import io
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
import torch.nn as nn
from PIL import Image

from navrl.agent.planner import PlannerContext, PlannerOutput
from navrl.agent.policy.base import Policy, ScoredBatch
from navrl.agent.prompt import SYSTEM, PromptConfig, build_prompt
from navrl.lru import BoundedCache

__all__ = ["HFPlanner", "HFPlannerConfig", "ImageCache", "MissingImageError", "split_prompt_key"]

_KEY_RE = re.compile(r"^<navrl-image:([0-9a-f]{24})>\n")


class MissingImageError(KeyError):
    """A prompt key names a screenshot the policy's image cache no longer holds."""


def split_prompt_key(prompt: str) -> tuple[str | None, str]:
    """``(image key or None, prompt text)`` of a prompt key (see the module docstring)."""
    m = _KEY_RE.match(prompt)
    return (m.group(1), prompt[m.end():]) if m else (None, prompt)


class ImageCache:
    """Screenshots by content hash: an LRU of PNG bytes, optionally backed by a directory.

    ``put`` returns the 24-hex-digit key; ``get`` returns the image (RGB). Shared by
    ``copy.deepcopy`` (the content never changes under a key, so sharing is safe).
    """

    def __init__(self, capacity: int = 8192, store_dir: str | Path | None = None):
        self.store_dir = Path(store_dir) if store_dir else None
        self._mem: BoundedCache[str, bytes] = BoundedCache(capacity, touch=True)

    def __deepcopy__(self, memo):
        return self

    def __len__(self) -> int:
        return len(self._mem)

    @property
    def capacity(self) -> int:
        return self._mem.size

    @capacity.setter
    def capacity(self, n: int) -> None:
        self._mem.size = n

    @staticmethod
    def key_of(image: Image.Image) -> str:
        h = hashlib.blake2b(digest_size=12)
        h.update(f"{image.mode}|{image.size[0]}x{image.size[1]}|".encode())
        h.update(image.tobytes())
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        assert self.store_dir is not None
        return self.store_dir / key[:2] / f"{key}.png"

    def put(self, image: Image.Image) -> str:
        key = self.key_of(image)
        if self._mem.get(key) is not None:     # a hit counts as a use
            return key
        buf = io.BytesIO()
        image.save(buf, format="PNG", compress_level=1)
        data = buf.getvalue()
        self._mem.put(key, data)
        if self.store_dir is not None:
            p = self._path(key)
            if not p.exists():
                p.parent.mkdir(parents=True, exist_ok=True)
                tmp = p.with_suffix(".tmp")
                tmp.write_bytes(data)
                tmp.replace(p)
        return key

    def get(self, key: str) -> Image.Image:
        data = self._mem.get(key)     # a hit counts as a use
        if data is None:
            if self.store_dir is None or not self._path(key).exists():
                raise MissingImageError(
                    f"screenshot {key} is not in the planner's image cache (capacity {self.capacity}"
                    + (", no image_store" if self.store_dir is None else f", not in {self.store_dir}")
                    + "): raise HFPlannerConfig.image_cache_size or set image_store")
            data = self._path(key).read_bytes()
        return Image.open(io.BytesIO(data)).convert("RGB")


@dataclass
class HFPlannerConfig:
    """Settings of :class:`HFPlanner`. Every field is plain data (saved in checkpoints)."""

    model: str = ""
    """Local directory or hub id of the model; hub ids resolve only from the local HF cache
    (``local_files_only``)."""
    kind: str = "auto"
    """"vlm" (AutoModelForImageTextToText), "causal" (AutoModelForCausalLM) or "auto"
    (vlm when the model config has a ``vision_config``)."""
    dtype: str = "auto"
    """"float32", "bfloat16", "float16" or "auto" (bfloat16 on CUDA, float32 on CPU)."""
    device: str = "auto"
    """Torch device ("cpu", "cuda", "cuda:1", ...); "auto" picks cuda when available."""
    attn_implementation: str | None = None
    """Passed to ``from_pretrained`` ("sdpa", "flash_attention_2", "eager"); None: the default."""
    local_files_only: bool = True
    """Never touch the network when loading (navrl never downloads weights)."""
    trust_remote_code: bool = False
    """Allow model code shipped with the checkpoint."""
    use_image: bool = True
    """Send the screenshot to a VLM (ignored for causal LMs)."""
    image_max_side: int = 1024
    """Downscale screenshots so their longer side is at most this many pixels (before the
    image processor, whose own min/max pixel limits still apply)."""
    image_cache_size: int = 8192
    """Screenshots kept in memory (as PNG, tens of kB each) for re-scoring; must cover at
    least one update's rollouts (tasks x rollouts x steps) or the SFT demonstration set."""
    image_store: str | None = None
    """Directory of content-addressed screenshot PNGs backing the cache (survives restarts
    and cache eviction); None keeps them in memory only."""
    use_lora: bool = True
    """Train LoRA adapters only (``peft``); False trains the whole language model."""
    lora_r: int = 16
    """LoRA rank."""
    lora_alpha: int = 32
    """LoRA scaling numerator (scale = alpha / r)."""
    lora_dropout: float = 0.0
    """LoRA dropout; active only while score() runs in train mode (gradient checkpointing).
    Keep 0 for PPO: rollout and re-scored log-probs must come from the same function."""
    lora_targets: tuple[str, ...] | str = ("q_proj", "k_proj", "v_proj", "o_proj")
    """Module names (suffixes) that get adapters, or a peft regex / "all-linear". The Qwen-VL
    vision tower names its layers qkv/proj/fc1/fc2, so these defaults adapt the LM only."""
    freeze_vision: bool = True
    """Without LoRA: keep the vision tower (and its merger) frozen."""
    max_new_tokens: int = 160
    """Generation budget per planner step (tokens)."""
    temperature: float = 1.0
    """Sampling temperature of ``plan`` (the trainer overrides it with rollout_temperature)."""
    gen_batch_size: int = 32
    """Contexts per ``generate`` call (larger batches are split)."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass (large models); score() then runs in
    train mode."""
    entropy_grad: bool = True
    """Let gradients flow through the per-token entropy (needed only for an entropy bonus;
    False saves a [N, L, vocab] activation)."""
    eos_token: str | None = None
    """End-of-turn token appended to SFT targets and accepted as a stop; None: the first of
    the generation config's eos ids (``<|im_end|>`` for Qwen instruct models)."""
    prompt_history: int = 8
    """Earlier steps shown in the prompt."""
    prompt_ui_lines: int = 60
    """UI-tree lines shown in the prompt."""
    prompt_reasoning: bool = True
    """Show earlier steps' reasoning in the prompt."""
    prompt_compact: bool = False
    """Compact screen text (labels only), the tiny planner's format."""
    seed: int = 0
    """Seed of the LoRA initialisation."""

    @staticmethod
    def from_dict(d: dict) -> "HFPlannerConfig":
        known = {f.name for f in fields(HFPlannerConfig)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown HFPlannerConfig fields {unknown}")
        d = dict(d)
        if isinstance(d.get("lora_targets"), list):
            d["lora_targets"] = tuple(d["lora_targets"])
        return HFPlannerConfig(**d)


class _LogprobRecorder:
    """Logits processor that bans the vision placeholder tokens and records log p(token)
    under softmax(raw logits / temperature) — the distribution generate() samples from.

    Called once per generated token, before sampling; the token chosen at call k is read at
    call k + 1 (it is then the last input id) and, for the final token, by :meth:`finish`.
    """

    def __init__(self, banned: list[int], temperature: float = 1.0):
        self.banned = banned
        self.temperature = temperature
        self.prev: torch.Tensor | None = None
        self.lps: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if self.prev is not None:
            self.lps.append(self.prev.gather(1, input_ids[:, -1:]).squeeze(1))
        if self.banned:
            scores = scores.clone()
            scores[:, self.banned] = float("-inf")
        self.prev = torch.log_softmax(scores.float() / self.temperature, dim=-1)
        return scores

    def finish(self, last_tokens: torch.Tensor) -> torch.Tensor:
        if self.prev is not None:
            self.lps.append(self.prev.gather(1, last_tokens[:, None]).squeeze(1))
            self.prev = None
        return torch.stack(self.lps, dim=1) if self.lps else torch.zeros(last_tokens.shape[0], 0)


def _resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    if name == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    try:
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype must be auto/float32/bfloat16/float16, got {name!r}") from None


class HFPlanner(Policy):
    """A Hugging Face (V)LM planner policy (see the module docstring)."""

    name = "hf"

    def __init__(self, config: HFPlannerConfig):
        from transformers import AutoConfig, AutoTokenizer
        c = self.config = config
        if not c.model:
            raise ValueError("HFPlannerConfig.model is empty: give a local model directory or a cached hub id")
        dev = c.device if c.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
        self.device = torch.device(dev)
        self.dtype = _resolve_dtype(c.dtype, self.device)
        load = dict(local_files_only=c.local_files_only, trust_remote_code=c.trust_remote_code)
        hf_cfg = AutoConfig.from_pretrained(c.model, **load)
        kind = c.kind
        if kind == "auto":
            kind = "vlm" if getattr(hf_cfg, "vision_config", None) is not None else "causal"
        if kind not in ("vlm", "causal"):
            raise ValueError(f"kind must be auto/vlm/causal, got {c.kind!r}")
        self.kind = kind
        self.tokenizer = AutoTokenizer.from_pretrained(c.model, **load)
        import transformers
        new_api = int(transformers.__version__.split(".")[0]) >= 5 or tuple(
            int(x) for x in transformers.__version__.split(".")[:2]) >= (4, 56)
        mkw = dict(load, **{"dtype" if new_api else "torch_dtype": self.dtype})
        if c.attn_implementation:
            mkw["attn_implementation"] = c.attn_implementation
        if kind == "vlm":
            from transformers import AutoModelForImageTextToText
            model = AutoModelForImageTextToText.from_pretrained(c.model, **mkw)
        else:
            from transformers import AutoModelForCausalLM
            model = AutoModelForCausalLM.from_pretrained(c.model, **mkw)
        model.to(self.device)
        self.image_processor = None
        self.image_token_id: int | None = None
        if kind == "vlm" and c.use_image:
            from transformers import AutoImageProcessor
            self.image_token_id = getattr(hf_cfg, "image_token_id", None)
            self.image_processor = AutoImageProcessor.from_pretrained(c.model, **load)
            if self.image_token_id is None or not hasattr(self.image_processor, "merge_size"):
                raise NotImplementedError(
                    f"image input is implemented for the Qwen-VL family (an image_token_id placeholder expanded "
                    f"by image_grid_thw / merge_size**2); {type(model).__name__} is not one: set use_image=False "
                    f"to run it text-only")
        if getattr(self.tokenizer, "chat_template", None) is None and kind == "vlm" and c.use_image:
            raise ValueError("the tokenizer has no chat template: a VLM needs one to place the image")

        # trainable parameters: LoRA adapters, or the language model
        for p in model.parameters():
            p.requires_grad_(False)
        if c.use_lora:
            from peft import LoraConfig, get_peft_model
            targets = c.lora_targets if isinstance(c.lora_targets, str) else list(c.lora_targets)
            cuda = [self.device.index or 0] if self.device.type == "cuda" else []
            with torch.random.fork_rng(devices=cuda):      # seeded adapters, global RNG untouched
                torch.manual_seed(c.seed)
                model = get_peft_model(model, LoraConfig(r=c.lora_r, lora_alpha=c.lora_alpha,
                                                         lora_dropout=c.lora_dropout, target_modules=targets,
                                                         bias="none"))
            # adapters in float32 for stable updates when the base runs in bf16/fp16
            for n, p in model.named_parameters():
                if p.requires_grad:
                    p.data = p.data.float()
        else:
            for n, p in model.named_parameters():
                vision = any(k in n for k in ("visual", "vision_tower", "vision_model", "multi_modal_projector"))
                p.requires_grad_(not (c.freeze_vision and vision))
        if c.gradient_checkpointing:
            if hasattr(model, "activation_checkpointing_enable"):       # transformers >= 5.x
                model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
            else:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            if hasattr(model, "enable_input_require_grads"):
                model.enable_input_require_grads()
        model.eval()
        self.model = model

        gen = getattr(model, "generation_config", None)
        eos = getattr(gen, "eos_token_id", None) if gen is not None else None
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        if self.tokenizer.eos_token_id is not None and self.tokenizer.eos_token_id not in eos:
            eos.append(self.tokenizer.eos_token_id)
        if c.eos_token is not None:
            e = self.tokenizer.convert_tokens_to_ids(c.eos_token)
            eos = [e] + [i for i in eos if i != e]
        if not eos:
            raise ValueError("the model has no end-of-sequence token (set HFPlannerConfig.eos_token)")
        self.stop_ids: list[int] = eos
        self.eos_id: int = eos[0]
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = getattr(gen, "pad_token_id", None) if gen is not None else None
        self.pad_id: int = pad if pad is not None else self.eos_id

        fwd = inspect.signature(self._base_model().forward).parameters
        self._has_logits_to_keep = "logits_to_keep" in fwd
        self._has_mm_types = "mm_token_type_ids" in fwd   # transformers >= 5 (M-RoPE needs it there)
        self.prompt_cfg = PromptConfig(max_history=c.prompt_history, max_ui_lines=c.prompt_ui_lines,
                                       include_reasoning=c.prompt_reasoning, compact=c.prompt_compact)
        self.images = ImageCache(c.image_cache_size, c.image_store)
        # the policy never writes vision placeholders (score() would read them as image slots):
        # they are masked out of its distribution in generation and in score() alike
        self.banned_ids: list[int] = sorted({int(i) for i in (getattr(hf_cfg, a, None) for a in (
            "image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")) if i is not None}
            - set(self.stop_ids))
        self.sample = True
        self.temperature = c.temperature
        self.critic = None   # set by the trainer: maps state [N,H] -> value [N] (logged only)
        self._ids_cache: BoundedCache[str, list[int]] = BoundedCache(4096, touch=True)

    # ------------------------------------------------------------------ Policy
    def _base_model(self) -> nn.Module:
        m = self.model
        return m.get_base_model() if hasattr(m, "get_base_model") else m

    @property
    def uses_image(self) -> bool:
        return self.image_processor is not None

    @property
    def state_dim(self) -> int:
        cfg = self._base_model().config
        text = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
        return int(text.hidden_size)

    def policy_parameters(self) -> list[nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def trainable_state(self) -> dict[str, torch.Tensor]:
        return {n: p.detach().cpu().clone() for n, p in self.model.named_parameters() if p.requires_grad}

    def state_dict_all(self) -> dict:
        cfg = asdict(self.config)
        if isinstance(cfg["lora_targets"], tuple):
            cfg["lora_targets"] = list(cfg["lora_targets"])
        return {"format": "navrl-hf-planner-1", "config": cfg, "trainable": self.trainable_state()}

    def load_state_dict_all(self, state: dict) -> None:
        if state.get("format") != "navrl-hf-planner-1":
            raise ValueError("not an HFPlanner state (format navrl-hf-planner-1)")
        params = dict(self.model.named_parameters())
        want = {n for n, p in params.items() if p.requires_grad}
        got = set(state["trainable"])
        if want != got:
            raise ValueError(f"trainable parameters differ from the saved ones: missing {sorted(want - got)[:5]}, "
                             f"unexpected {sorted(got - want)[:5]} (LoRA settings or model changed?)")
        with torch.no_grad():
            for n, t in state["trainable"].items():
                params[n].copy_(t.to(params[n].device, params[n].dtype))

    @staticmethod
    def from_state(state: dict, **overrides) -> "HFPlanner":
        """Rebuild a planner from :meth:`state_dict_all` (``overrides``: e.g. model=, device=)."""
        cfg = HFPlannerConfig.from_dict({**state["config"], **overrides})
        p = HFPlanner(cfg)
        p.load_state_dict_all(state)
        return p

    def prompt_text(self, ctx: PlannerContext) -> str:
        """The prompt key of ``ctx`` (registers its screenshot with the image cache for a VLM)."""
        text = build_prompt(ctx, self.prompt_cfg)
        if self.uses_image and ctx.obs.has_screenshot:
            im = ctx.obs.screenshot.convert("RGB")
            cap = self.config.image_max_side
            if max(im.size) > cap:
                s = cap / max(im.size)
                im = im.resize((max(1, round(im.size[0] * s)), max(1, round(im.size[1] * s))), Image.BICUBIC)
            return f"<navrl-image:{self.images.put(im)}>\n{text}"
        return text

    def encode_target(self, text: str) -> list[int]:
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return ids[: self.config.max_new_tokens - 1] + [self.eos_id]

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode([i for i in ids if i not in self.stop_ids and i != self.pad_id],
                                     skip_special_tokens=True)

    # ------------------------------------------------------------------ inputs
    def _chat_ids(self, text: str, with_image: bool) -> list[int]:
        """Token ids of the chat prompt (one image placeholder when ``with_image``)."""
        ck = ("I" if with_image else "T") + text
        hit = self._ids_cache.get(ck)
        if hit is not None:
            return hit
        tok = self.tokenizer
        if getattr(tok, "chat_template", None):
            user = [{"type": "image"}, {"type": "text", "text": text}] if with_image else text
            msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
            s = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
            ids = tok(s, add_special_tokens=False)["input_ids"]
        else:
            ids = tok(f"{SYSTEM}\n\n{text}\n\n", add_special_tokens=True)["input_ids"]
        if with_image and ids.count(self.image_token_id) != 1:
            raise ValueError(f"the chat template placed {ids.count(self.image_token_id)} image placeholders, expected 1")
        return self._ids_cache.put(ck, ids)

    def _encode_prompts(self, prompts: list[str]) -> tuple[list[list[int]], dict]:
        """Per-row prompt ids (image placeholders expanded) and the vision tensors of the batch."""
        keys, texts = zip(*(split_prompt_key(p) for p in prompts))
        if any(k is not None for k in keys) and not self.uses_image:
            raise ValueError("a prompt names a screenshot but this planner takes no images")
        images = [self.images.get(k) for k in keys if k is not None]
        vision: dict = {}
        grids: list[int] = []
        if images:
            out = self.image_processor(images=images, return_tensors="pt")
            vision = {"pixel_values": out["pixel_values"].to(self.device, self.dtype),
                      "image_grid_thw": out["image_grid_thw"].to(self.device)}
            merge = int(self.image_processor.merge_size) ** 2
            grids = [int(g.prod()) // merge for g in out["image_grid_thw"]]
        seqs, gi = [], 0
        for k, t in zip(keys, texts):
            ids = self._chat_ids(t, k is not None)
            if k is not None:
                j = ids.index(self.image_token_id)
                ids = ids[:j] + [self.image_token_id] * grids[gi] + ids[j + 1:]
                gi += 1
            seqs.append(ids)
        return seqs, vision

    def _left_pad(self, seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        L = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), L), self.pad_id, dtype=torch.long)
        att = torch.zeros((len(seqs), L), dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, L - len(s):] = torch.tensor(s, dtype=torch.long)
            att[i, L - len(s):] = 1
        return ids, att

    def _model_inputs(self, ids: torch.Tensor, att: torch.Tensor, vision: dict) -> dict:
        kw = {"input_ids": ids.to(self.device), "attention_mask": att.to(self.device)}
        if vision:
            kw.update(vision)
            if self._has_mm_types:
                kw["mm_token_type_ids"] = (ids == self.image_token_id).long().to(self.device)
        else:
            # text only: positions from the attention mask, as generate() computes them
            kw["position_ids"] = ((att.cumsum(1) - 1).clamp(min=0)).to(self.device)
        return kw

    # ------------------------------------------------------------------ generation
    @torch.no_grad()
    def plan(self, contexts: list[PlannerContext]) -> list[PlannerOutput]:
        out: list[PlannerOutput] = []
        bs = max(1, self.config.gen_batch_size)
        for i in range(0, len(contexts), bs):
            out += self._plan_batch(contexts[i:i + bs])
        return out

    def _plan_batch(self, contexts: list[PlannerContext]) -> list[PlannerOutput]:
        if not contexts:
            return []
        from transformers import GenerationConfig, LogitsProcessorList
        self.model.eval()
        prompts = [self.prompt_text(c) for c in contexts]
        seqs, vision = self._encode_prompts(prompts)
        ids, att = self._left_pad(seqs)
        kw = self._model_inputs(ids, att, vision)
        kw.pop("position_ids", None)    # generate() derives them from the attention mask
        gcfg = GenerationConfig(
            max_new_tokens=self.config.max_new_tokens, do_sample=bool(self.sample),
            temperature=float(self.temperature) if self.sample else None, top_k=0 if self.sample else None,
            top_p=1.0 if self.sample else None, eos_token_id=list(self.stop_ids), pad_token_id=self.pad_id,
            return_dict_in_generate=True)
        rec = _LogprobRecorder(self.banned_ids, float(self.temperature) if self.sample else 1.0)
        hook_state: dict = {}

        def grab(_mod, args):
            if "h" not in hook_state:
                hook_state["h"] = args[0][:, -1].detach().float()

        head = self.model.get_output_embeddings() if self.critic is not None else None
        handle = head.register_forward_pre_hook(grab) if head is not None else None
        try:
            res = self.model.generate(**kw, generation_config=gcfg, logits_processor=LogitsProcessorList([rec]))
        finally:
            if handle is not None:
                handle.remove()
        gen = res.sequences[:, ids.shape[1]:].cpu()
        lps = rec.finish(res.sequences[:, -1]).cpu()
        h = hook_state.get("h")
        values = self.plan_values(h.cpu() if h is not None else None, len(contexts))
        outs = []
        for b, p in enumerate(prompts):
            toks, lp = [], []
            for j, t in enumerate(gen[b].tolist()):
                toks.append(t)
                lp.append(float(lps[b, j]))
                if t in self.stop_ids:
                    break
            outs.append(PlannerOutput(self.decode(toks), token_ids=toks, logprobs=lp, value=values[b], prompt=p))
        return outs

    # ------------------------------------------------------------------ scoring (with grad)
    def score(self, prompts: list[str], outputs: list[list[int]], temperature: float = 1.0) -> ScoredBatch:
        """Log-probs (at ``temperature``), entropies and last-prompt-token states of ``outputs``
        after ``prompts``.

        Layout: prompts left-padded to a common end column Lp, outputs right-padded after it,
        so output token j is predicted at column Lp - 1 + j for every row.
        """
        self.model.train(self.config.gradient_checkpointing)
        P, vision = self._encode_prompts(prompts)
        B = len(P)
        Lo = max(1, max(len(o) for o in outputs))
        pids, patt = self._left_pad(P)
        Lp = pids.shape[1]
        oids = torch.full((B, Lo), self.pad_id, dtype=torch.long)
        omask = torch.zeros((B, Lo), dtype=torch.long)
        for i, o in enumerate(outputs):
            if o:
                oids[i, :len(o)] = torch.tensor(o, dtype=torch.long)
                omask[i, :len(o)] = 1
        ids, att = torch.cat([pids, oids], 1), torch.cat([patt, omask], 1)
        kw = self._model_inputs(ids, att, vision)
        if self._has_logits_to_keep:
            kw["logits_to_keep"] = Lo + 1     # columns Lp-1 .. Lp+Lo-1: the output predictions (+1 unused)
        res = self.model(**kw, output_hidden_states=True, use_cache=False)
        logits = res.logits[:, -(Lo + 1):-1] if self._has_logits_to_keep else res.logits[:, Lp - 1:Lp - 1 + Lo]
        if self.banned_ids:
            logits = logits.clone()
            logits[..., self.banned_ids] = float("-inf")
        logp_all = torch.log_softmax(logits.float() / temperature, dim=-1)
        m = omask.to(self.device).float()
        tgt = oids.to(self.device)
        logp = logp_all.gather(2, tgt[..., None]).squeeze(2) * m
        with torch.set_grad_enabled(torch.is_grad_enabled() and self.config.entropy_grad):
            ent = -(logp_all.exp() * logp_all.clamp_min(torch.finfo(logp_all.dtype).min)).sum(-1) * m
        # imported here: navrl.rl sits above navrl.agent in the layer order (docs/design.md §1)
        from navrl.agent.policy.hidden import last_prompt_token_hidden
        state = last_prompt_token_hidden(res.hidden_states[-1], patt.sum(1).to(self.device), att.to(self.device),
                                         padding_side="left").float()
        return ScoredBatch(logp.cpu(), m.cpu(), ent.cpu(), state.cpu())

    def n_params(self, trainable: bool = False) -> int:
        return sum(p.numel() for p in self.model.parameters() if p.requires_grad or not trainable)
