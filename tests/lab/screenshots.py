"""Images for the documentation (docs/_static/screenshots/), made from what the browser shows, and the checks that
they show something: written small (an adaptive 256-colour palette), read back to measure them.

The docs' copies are rewritten only when asked (REFRESH_ENV=1); otherwise the shots go to a temporary folder, so a
test run leaves the checkout as it found it.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

from PIL import Image, ImageOps, ImageStat

DOCS_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "_static" / "screenshots"
REFRESH_ENV = "JUPYTER_DIST_REFRESH_SCREENSHOTS"
COLOURS = 256
# How long the animation shows each frame, and its last one (the ended run), in milliseconds.
FRAME_MS = 450
LAST_FRAME_MS = 3000


def refreshing() -> bool:
    """Whether this run rewrites the docs' screenshots (REFRESH_ENV set to 1, or any value but 0/false/no/off)."""
    return os.environ.get(REFRESH_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def image(png: bytes, margin: int = 0) -> Image.Image:
    """A screenshot Playwright took (PNG bytes), as an RGB image with ``margin`` px of its background (its most
    common colour) around it."""
    im = Image.open(io.BytesIO(png)).convert("RGB")
    if not margin:
        return im
    return ImageOps.expand(im, border=margin, fill=background(im))


def save_png(png: bytes, path: Path, margin: int = 0) -> Path:
    """The screenshot (with ``margin`` px of its background around it), saved to ``path`` in a palette of
    COLOURS (a UI has few colours: it reads the same, at a fraction of the size)."""
    image(png, margin).quantize(COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        path, optimize=True
    )
    return path


def save_animation(frames: list[bytes], path: Path, margin: int = 0) -> Path:
    """The screenshots ``frames`` as an animated GIF looping forever, each shown FRAME_MS (a frame like the one
    before it is left out) and the last LAST_FRAME_MS. Each gets ``margin`` px of its background around it, and as
    much below it as makes it as tall as the tallest. One palette for all of them, so that colours do not flicker
    from frame to frame: made from the last two, which show the most (the last running one has the Stop button
    and the running badge; the ended one the completed badge)."""
    images: list[Image.Image] = []
    for png in frames:
        frame = image(png, margin)
        if not images or frame.tobytes() != images[-1].tobytes():
            images.append(frame)
    width, height = max(im.width for im in images), max(im.height for im in images)
    images = [pad_to(im, width, height) for im in images]
    shown = images[-2:]
    both = Image.new("RGB", (width, height * len(shown)))
    for index, frame in enumerate(shown):
        both.paste(frame, (0, height * index))
    palette = both.quantize(COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    indexed = [im.quantize(palette=palette, dither=Image.Dither.NONE) for im in images]
    indexed[0].save(
        path,
        save_all=True,
        append_images=indexed[1:],
        duration=[FRAME_MS] * (len(indexed) - 1) + [LAST_FRAME_MS],
        loop=0,
        optimize=True,
        disposal=1,
    )
    return path


def pad_to(im: Image.Image, width: int, height: int) -> Image.Image:
    """``im`` at the top left of a ``width`` x ``height`` image of its background."""
    if im.size == (width, height):
        return im
    padded = Image.new("RGB", (width, height), background(im))
    padded.paste(im, (0, 0))
    return padded


def background(im: Image.Image) -> tuple[int, int, int]:
    """The image's most common colour."""
    return max(im.getcolors(im.width * im.height))[1]


def size(path: Path) -> tuple[int, int]:
    """The image's width and height in pixels."""
    with Image.open(path) as im:
        return im.size


def brightness(path: Path) -> tuple[float, float]:
    """The mean and the standard deviation of the image's grey levels (0 to 255)."""
    with Image.open(path) as im:
        stat = ImageStat.Stat(im.convert("L"))
    return stat.mean[0], stat.stddev[0]


def frames_of(path: Path) -> list[bytes]:
    """Every frame of an animation, as its RGB pixels."""
    frames = []
    with Image.open(path) as im:
        for index in range(getattr(im, "n_frames", 1)):
            im.seek(index)
            frames.append(im.convert("RGB").tobytes())
    return frames
