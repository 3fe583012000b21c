"""Perceptual hash of a screenshot (layer 1): the 64-bit DCT pHash.

Two screens that look the same hash the same (or within a few bits), whatever produced
them; the rollout records it per before-screen and GiGPPO pairs states of sibling
rollouts by the Hamming distance between these hashes.
"""
from __future__ import annotations

from typing import Any


def phash64(image: Any) -> int:
    """64-bit perceptual hash (DCT pHash, ``imagehash.phash`` with hash_size=8) of an image.

    Args:
        image: a ``PIL.Image.Image`` (or an array ``PIL.Image.fromarray`` accepts).
    Returns:
        unsigned python int in [0, 2^64); bit order = imagehash's (row-major, first bit most
        significant), so ``f"{phash64(im):016x}" == str(imagehash.phash(im))``.
    """
    import imagehash  # imported here: only callers that hash screenshots need it
    from PIL import Image

    if not isinstance(image, Image.Image):
        image = Image.fromarray(image)
    bits = imagehash.phash(image, hash_size=8).hash.flatten()
    value = 0
    for bit in bits:
        value = (value << 1) | int(bool(bit))
    return value
