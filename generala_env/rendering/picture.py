"""A game as a picture: ``rgb_array`` frames drawn with plain NumPy (no drawing library).

A frame shows the five dice (dice held back at the last reroll on a gold face with a bar
under them), the rolls left, every player's sheet (open lines blank, written lines with
their points, crossed-out lines as a red ``X``), the totals, and the last moves. Frames
are ``uint8 (H, W, 3)``; the size depends only on the rule set's number of lines and the
number of players, so a video of one game has one size throughout. Text is drawn with a
built-in 5x7 bitmap font, upper case.

What is the same from frame to frame (the felt, the sheet's grid and labels, the dice
faces, the text of a given string) is drawn once and kept, so a frame costs a few
array copies.
"""

from __future__ import annotations

import base64
import struct
import zlib
from functools import cache, lru_cache
from typing import NamedTuple

import numpy as np

from generala_env.core.checks import is_whole
from generala_env.core.dice import KEEP_COUNTS, NUM_MASKS, ROLLS
from generala_env.core.game import OPEN, Game

# -- the font ------------------------------------------------------------------------
_GLYPHS = {
    "A": ".###. #...# #...# ##### #...# #...# #...#",
    "B": "####. #...# #...# ####. #...# #...# ####.",
    "C": ".###. #...# #.... #.... #.... #...# .###.",
    "D": "####. #...# #...# #...# #...# #...# ####.",
    "E": "##### #.... #.... ####. #.... #.... #####",
    "F": "##### #.... #.... ####. #.... #.... #....",
    "G": ".###. #...# #.... #.### #...# #...# .####",
    "H": "#...# #...# #...# ##### #...# #...# #...#",
    "I": ".###. ..#.. ..#.. ..#.. ..#.. ..#.. .###.",
    "J": "..### ...#. ...#. ...#. ...#. #..#. .##..",
    "K": "#...# #..#. #.#.. ##... #.#.. #..#. #...#",
    "L": "#.... #.... #.... #.... #.... #.... #####",
    "M": "#...# ##.## #.#.# #.#.# #...# #...# #...#",
    "N": "#...# #...# ##..# #.#.# #..## #...# #...#",
    "O": ".###. #...# #...# #...# #...# #...# .###.",
    "P": "####. #...# #...# ####. #.... #.... #....",
    "Q": ".###. #...# #...# #...# #.#.# #..#. .##.#",
    "R": "####. #...# #...# ####. #.#.. #..#. #...#",
    "S": ".#### #.... #.... .###. ....# ....# ####.",
    "T": "##### ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",
    "U": "#...# #...# #...# #...# #...# #...# .###.",
    "V": "#...# #...# #...# #...# #...# .#.#. ..#..",
    "W": "#...# #...# #...# #.#.# #.#.# #.#.# .#.#.",
    "X": "#...# #...# .#.#. ..#.. .#.#. #...# #...#",
    "Y": "#...# #...# .#.#. ..#.. ..#.. ..#.. ..#..",
    "Z": "##### ....# ...#. ..#.. .#... #.... #####",
    "0": ".###. #...# #..## #.#.# ##..# #...# .###.",
    "1": "..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###.",
    "2": ".###. #...# ....# ...#. ..#.. .#... #####",
    "3": "####. ....# ....# .###. ....# ....# ####.",
    "4": "...#. ..##. .#.#. #..#. ##### ...#. ...#.",
    "5": "##### #.... ####. ....# ....# #...# .###.",
    "6": "..##. .#... #.... ####. #...# #...# .###.",
    "7": "##### ....# ...#. ..#.. .#... .#... .#...",
    "8": ".###. #...# #...# .###. #...# #...# .###.",
    "9": ".###. #...# #...# .#### ....# ...#. .##..",
    " ": "..... ..... ..... ..... ..... ..... .....",
    "-": "..... ..... ..... ##### ..... ..... .....",
    ":": "..... ..#.. ..#.. ..... ..#.. ..#.. .....",
    "/": "....# ....# ...#. ..#.. .#... #.... #....",
    ".": "..... ..... ..... ..... ..... .##.. .##..",
    ",": "..... ..... ..... ..... .##.. ..#.. .#...",
    "(": "...#. ..#.. .#... .#... .#... ..#.. ...#.",
    ")": ".#... ..#.. ...#. ...#. ...#. ..#.. .#...",
    "*": "..... ..#.. #.#.# .###. #.#.# ..#.. .....",
    "+": "..... ..#.. ..#.. ##### ..#.. ..#.. .....",
    "=": "..... ..... ##### ..... ##### ..... .....",
    "%": "##..# ##..# ...#. ..#.. .#... #..## #..##",
    ">": ".#... ..#.. ...#. ....# ...#. ..#.. .#...",
    "'": "..#.. ..#.. .#... ..... ..... ..... .....",
    "?": ".###. #...# ....# ...#. ..#.. ..... ..#..",
}
_FONT = {c: np.array([[ch == "#" for ch in row] for row in rows.split()], dtype=bool) for c, rows in _GLYPHS.items()}
SCALE = 2  # font pixels per bitmap pixel
CHAR_W, CHAR_H = 6 * SCALE, 7 * SCALE  # advance (a glyph and a one-pixel gap) and height


@lru_cache(maxsize=4096)
def text_mask(text: str, scale: int = SCALE) -> np.ndarray:
    """The pixels of ``text`` (upper-cased; an unknown character draws as ``?``) as a bool array."""
    text = text.upper()
    out = np.zeros((7, 6 * len(text)), dtype=bool)
    for i, c in enumerate(text):
        out[:, 6 * i : 6 * i + 5] = _FONT.get(c, _FONT["?"])
    out = out[:, :-1] if text else out
    out = np.kron(out, np.ones((scale, scale), dtype=bool)) if scale > 1 else out
    out.flags.writeable = False
    return out


def draw_text(img: np.ndarray, x: int, y: int, text: str, color, scale: int = SCALE) -> None:
    """Draw ``text`` with its top-left corner at ``(x, y)``, clipped to the image."""
    m = text_mask(text, scale)
    h, w = min(m.shape[0], img.shape[0] - y), min(m.shape[1], img.shape[1] - x)
    if h > 0 and w > 0:
        img[y : y + h, x : x + w][m[:h, :w]] = color


# -- colours and sizes ---------------------------------------------------------------
FELT = (28, 94, 62)
INK = (20, 20, 20)
WHITE = (250, 250, 250)
PAPER = (250, 247, 238)
GRID = (190, 184, 170)
RED = (200, 30, 30)
CROSSED = (246, 214, 214)
GOLD = (242, 196, 48)
TO_MOVE = (255, 236, 150)
DIM = (150, 190, 165)

DIE = 48  # a die's side in pixels
PAD = 16
ROW_H = 22
LABEL_W = 16 * CHAR_W  # the longest line name, "double generala", and a little more
COL_W = 72
TOP_DICE = 38
TOP_SHEET = 104
MOVES_SHOWN = 3  # lines of "last moves" under the sheet

_PIP_SPOTS = {
    1: [(1, 1)],
    2: [(0, 2), (2, 0)],
    3: [(0, 2), (1, 1), (2, 0)],
    4: [(0, 0), (0, 2), (2, 0), (2, 2)],
    5: [(0, 0), (0, 2), (1, 1), (2, 0), (2, 2)],
    6: [(0, 0), (0, 2), (1, 0), (1, 2), (2, 0), (2, 2)],
}


@cache
def die_image(face: int, held: bool) -> np.ndarray:
    """One die, ``DIE x DIE``: white with black pips, or gold with a dark border when held."""
    img = np.empty((DIE, DIE, 3), dtype=np.uint8)
    img[:] = FELT
    face_color, border = (GOLD, RED) if held else (WHITE, INK)
    img[1:-1, 1:-1] = border
    b = 4 if held else 2
    img[b:-b, b:-b] = face_color
    yy, xx = np.mgrid[0:DIE, 0:DIE]
    r = 5
    for row, col in _PIP_SPOTS[face]:
        cy, cx = 12 + 12 * row, 12 + 12 * col
        img[(yy - cy) ** 2 + (xx - cx) ** 2 <= r * r] = INK
    img.flags.writeable = False
    return img


def frame_size(num_lines: int, num_players: int, scale: int = 2) -> tuple[int, int]:
    """``(height, width)`` of a frame: multiples of 16 at scale 2 (what video encoders like), of 8 at scale 1."""
    w = max(480, PAD + LABEL_W + COL_W * num_players + PAD)
    h = TOP_SHEET + ROW_H * (num_lines + 2) + 10 + MOVES_SHOWN * (CHAR_H + 6) + PAD
    h, w = (h + 15) // 16 * 16, (w + 15) // 16 * 16
    return (h, w) if scale == 2 else (h // 2, w // 2)


def _col_x(p: int) -> int:
    return PAD + LABEL_W + COL_W * p


def _row_y(row: int) -> int:
    """Top of sheet row ``row``: 0 is the header, 1 … L the lines, L + 1 the totals."""
    return TOP_SHEET + ROW_H * row


@lru_cache(maxsize=64)
def _background(lines: tuple[str, ...], num_players: int) -> np.ndarray:
    """The felt, the empty sheet with its grid, the line names and the totals label."""
    L = len(lines)
    h, w = frame_size(L, num_players)
    img = np.empty((h, w, 3), dtype=np.uint8)
    img[:] = FELT
    x0, x1 = PAD - 4, _col_x(num_players)
    img[_row_y(0) : _row_y(L + 2), x0:x1] = PAPER
    for row in range(L + 3):
        y = min(_row_y(row), _row_y(L + 2) - 1)
        img[y, x0:x1] = GRID
    img[_row_y(L + 1), x0:x1] = INK  # a firm line above the totals
    for p in range(num_players + 1):
        img[_row_y(0) : _row_y(L + 2), min(_col_x(p), x1 - 1)] = GRID
    img[_row_y(0) : _row_y(L + 2), x0] = GRID
    for row, line in enumerate(lines, start=1):
        draw_text(img, PAD, _row_y(row) + 4, line.replace("_", " "), INK)
    draw_text(img, PAD, _row_y(L + 1) + 4, "total", INK)
    draw_text(img, PAD, _row_y(0) + 4, "line", (110, 104, 90))
    draw_text(img, 5 * (DIE + 8) + PAD + 8, TOP_DICE, "rolls", WHITE)
    draw_text(img, 5 * (DIE + 8) + PAD + 8, TOP_DICE + CHAR_H + 4, "left", WHITE)
    img.flags.writeable = False
    return img


def held_dice(game: Game) -> list[bool]:
    """For each of the sorted dice, whether it was held back at the turn's last reroll (the
    game's ``locked`` keep: the first dice of each face it counts)."""
    counts = KEEP_COUNTS[game.locked].tolist()
    out = []
    for d in ROLLS[game.roll].tolist():
        out.append(counts[d - 1] > 0)
        counts[d - 1] -= 1
    return out


def describe_move(rules, seat: int, action: int, points: int, roll_before: int) -> str:
    """A move played, in words: ``p0 held 4 4 4, rerolled 2``, ``p1 wrote 20 on fours``,
    ``p0 crossed out generala``."""
    if action < NUM_MASKS:
        held = [int(d) for i, d in enumerate(ROLLS[roll_before]) if action >> i & 1]
        if not held:
            return f"p{seat} rerolled all five"
        return f"p{seat} held {' '.join(map(str, held))}, rerolled {5 - len(held)}"
    name = rules.lines[action - NUM_MASKS].replace("_", " ")
    return f"p{seat} crossed out {name}" if points == 0 else f"p{seat} wrote {points} on {name}"


class Picture(NamedTuple):
    """What one frame shows, and nothing else: small, picklable, and enough to draw the frame
    anywhere (:func:`draw`). ``sheets`` is ``(players, lines)`` with ``-1`` for an open line."""

    lines: tuple[str, ...]
    sheets: tuple[tuple[int, ...], ...]
    totals: tuple[int, ...]
    status: str
    dice: tuple[tuple[int, bool], ...]  # (face, held) of the sorted dice; empty once the game is over
    rolls_left: int
    player: int  # the seat to move; -1 once the game is over
    seat: int | None
    moves: tuple[str, ...]  # the last moves, in words, oldest first
    scale: int

    @classmethod
    def from_plain(cls, fields) -> Picture:
        """The picture whose fields, in order, came back from JSON (lists for tuples)."""
        lines, sheets, totals, status, dice, rolls_left, player, seat, moves, scale = fields
        return cls(
            tuple(lines),
            tuple(tuple(int(v) for v in row) for row in sheets),
            tuple(int(t) for t in totals),
            str(status),
            tuple((int(f), bool(h)) for f, h in dice),
            int(rolls_left),
            int(player),
            None if seat is None else int(seat),
            tuple(str(m) for m in moves),
            int(scale),
        )


def _status(game: Game) -> str:
    if game.over and game.num_players == 1:  # a game alone has a score, not a winner
        return f"game over: final score {int(game.totals()[0])}"
    if game.over:
        winners = game.winners()
        how = " (served)" if game.served_generala_winner is not None else ""
        who = " ".join(f"p{w}" for w in winners)
        return f"game over{how}: {'winner' if len(winners) == 1 else 'shared'} {who}"
    return f"round {game.turn + 1}/{game.num_lines}   p{game.player} to move"


def picture_of(game: Game, seat: int | None = None, moves=(), scale: int = 2) -> Picture:
    """The :class:`Picture` of ``game`` (arguments as :func:`render_rgb`)."""
    dice = () if game.over else tuple(zip(ROLLS[game.roll].tolist(), held_dice(game), strict=True))
    shown = tuple(describe_move(game.rules, *m) for m in list(moves)[-MOVES_SHOWN:])
    return Picture(
        tuple(game.rules.lines),
        tuple(map(tuple, game.sheets.tolist())),
        tuple(game.totals_view.tolist()),
        _status(game),
        dice,
        int(game.rolls_left),
        -1 if game.over else int(game.player),
        seat,
        shown,
        scale,
    )


SCALES = (1, 2)


def check_scale(scale) -> int:
    """``render_scale`` as an int: 2 (the default, text two pixels per font pixel) or 1 (half
    the width and height: a quarter of the pixels, what a video encoder must code)."""
    if not is_whole(scale) or scale not in SCALES:
        raise ValueError(f"render_scale must be 1 or 2, got {scale!r}")
    return int(scale)


def render_rgb(game: Game, seat: int | None = None, moves=(), scale: int = 2) -> np.ndarray:
    """The game as an ``uint8 (H, W, 3)`` picture (a new array).

    ``seat`` is marked ``*`` in the sheet's header ("you"); ``moves`` are the last moves as
    ``(seat, action, points, roll_before)`` tuples, oldest first: the last
    :data:`MOVES_SHOWN` are written under the sheet. ``scale=1`` gives the picture at half
    the width and height: every line and letter is drawn on even pixels, so keeping every
    other pixel gives the same picture with the font at one pixel per font pixel."""
    return draw(picture_of(game, seat, moves, scale))


def draw(picture: Picture) -> np.ndarray:
    """The frame of a :class:`Picture`, as :func:`render_rgb` draws it (a new array)."""
    img = _draw(picture)
    return np.ascontiguousarray(img[::2, ::2]) if picture.scale == 1 else img


def _draw(pic: Picture) -> np.ndarray:
    P, L = len(pic.sheets), len(pic.lines)
    img = _background(pic.lines, P).copy()
    draw_text(img, PAD, 12, pic.status, WHITE)
    # the dice and the rolls left
    if pic.dice:
        for i, (face, held) in enumerate(pic.dice):
            x = PAD + i * (DIE + 8)
            img[TOP_DICE : TOP_DICE + DIE, x : x + DIE] = die_image(face, held)
            if held:
                img[TOP_DICE + DIE + 3 : TOP_DICE + DIE + 7, x + 6 : x + DIE - 6] = GOLD
        for k in range(3 - 1):
            x = 5 * (DIE + 8) + PAD + 8 + 5 * CHAR_W + 8 + k * 22
            y = TOP_DICE + 6
            color = GOLD if k < pic.rolls_left else DIM
            img[y : y + 16, x : x + 16] = color
        draw_text(img, 5 * (DIE + 8) + PAD + 8 + 5 * CHAR_W + 8 + 44 + 4, TOP_DICE + 8, str(pic.rolls_left), WHITE)
    # the sheets
    for p in range(P):
        x = _col_x(p)
        if p == pic.player:
            img[_row_y(0) + 1 : _row_y(1), x + 1 : x + COL_W] = TO_MOVE
        draw_text(img, x + 8, _row_y(0) + 4, f"p{p}" + ("*" if p == pic.seat else ""), INK)
        for line in range(L):
            v = pic.sheets[p][line]
            if v == OPEN:
                continue
            y = _row_y(line + 1)
            if v == 0:
                img[y + 1 : y + ROW_H, x + 1 : x + COL_W] = CROSSED
                draw_text(img, x + COL_W // 2 - CHAR_W // 2, y + 4, "x", RED)
            else:
                t = str(v)
                draw_text(img, x + COL_W - 8 - len(t) * CHAR_W, y + 4, t, INK)
        t = str(pic.totals[p])
        draw_text(img, x + COL_W - 8 - len(t) * CHAR_W, _row_y(L + 1) + 4, t, INK)
    # the last moves
    y = _row_y(L + 2) + 10
    for m in pic.moves:
        draw_text(img, PAD, y, m, WHITE)
        y += CHAR_H + 6
    return img


# -- the picture as a file: PNG, and SVG for what shows SVG (a notebook, Pgx's save_svg) --------
def png_bytes(img: np.ndarray) -> bytes:
    """A frame (``uint8 (H, W, 3)``) as a PNG file's bytes (8-bit RGB, rows unfiltered)."""
    h, w, _ = img.shape
    rows = np.zeros((h, 1 + 3 * w), dtype=np.uint8)  # each row: filter type 0, then its pixels
    rows[:, 1:] = np.ascontiguousarray(img, dtype=np.uint8).reshape(h, 3 * w)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    head = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)  # 8 bits, RGB, deflate, no filter choice, no interlace
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + chunk(b"IEND", b"")


def svg_of(img: np.ndarray, scale: float = 1.0) -> str:
    """A frame as an SVG document: the frame itself (a PNG inside), ``scale`` times its size."""
    h, w, _ = img.shape
    data = base64.b64encode(png_bytes(img)).decode("ascii")
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        f'width="{w * scale:g}" height="{h * scale:g}" viewBox="0 0 {w} {h}">'
        f'<image width="{w}" height="{h}" href="data:image/png;base64,{data}" xlink:href="data:image/png;base64,{data}"/></svg>'
    )


def side_by_side(frames: list[np.ndarray], per_row: int = 4, gap: int = 8) -> np.ndarray:
    """Frames of one size in rows of ``per_row``, ``gap`` pixels of paper between them (a batch of games)."""
    h, w, _ = frames[0].shape
    rows = -(-len(frames) // per_row)
    cols = min(len(frames), per_row)
    out = np.empty((rows * h + (rows - 1) * gap, cols * w + (cols - 1) * gap, 3), dtype=np.uint8)
    out[:] = PAPER
    for i, f in enumerate(frames):
        y, x = (i // per_row) * (h + gap), (i % per_row) * (w + gap)
        out[y : y + h, x : x + w] = f
    return out


__all__ = [
    "render_rgb",
    "Picture",
    "picture_of",
    "draw",
    "describe_move",
    "held_dice",
    "frame_size",
    "check_scale",
    "draw_text",
    "text_mask",
    "png_bytes",
    "svg_of",
    "side_by_side",
]
