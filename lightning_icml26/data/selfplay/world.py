"""A toy self-play world that shows iteration collapse without any language model.

Problems are rendered text from ``K`` templates (arithmetic: sums, differences, products, remainders; graphs:
reachability, in-degree) at difficulty ``1 .. L`` (more operands / more nodes) in ``V`` seeded variants each,
so the problem space is finite (``K * L * V`` problems) and every problem has a computed answer.

:class:`ToySolver` stands in for the solver LLM: a skill per template, a solve probability
``sigmoid(slope * (skill_t - d))`` per template and difficulty, practice that raises the skill most on problems
near it and less on problems it has recently trained on (``gain / (1 + practice)``, ``practice`` a count of past
training on the problem that fades like the skill), and forgetting towards ``floor`` for every template at each
iteration. Its held-out score is the mean solve probability over every
(template, difficulty) cell, in points (0-100).

A questioner that narrows to a few templates therefore gives a rising then falling held-out score: the
mechanism the Seen-Detector reward is meant to counter.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import torch
from torch import Tensor, nn

__all__ = ["TEMPLATES", "ToySolver", "ToyWorld"]

TEMPLATES = ("add", "sub", "mul", "mod", "reach", "indegree")
"""Template names, in index order."""

_NODES = "abcdefghijklmnop"


def _render(template: str, difficulty: int, variant: int) -> tuple[str, str]:
    rng = random.Random(f"{template}/{difficulty}/{variant}")
    if template in ("add", "sub", "mul"):
        nums = [rng.randint(2, 9 + 10 * difficulty) for _ in range(difficulty + 1)]
        sym = {"add": "+", "sub": "-", "mul": "*"}[template]
        value = nums[0]
        for x in nums[1:]:
            value = value + x if sym == "+" else value - x if sym == "-" else value * x
        return f"compute {f' {sym} '.join(map(str, nums))}", str(value)
    if template == "mod":
        a, b = rng.randint(10**difficulty, 10 ** (difficulty + 1)), rng.randint(2, 3 + 3 * difficulty)
        return f"remainder of {a} divided by {b}", str(a % b)
    nodes = _NODES[: difficulty + 3]
    edges = sorted({(rng.choice(nodes), rng.choice(nodes)) for _ in range(difficulty + 3)})
    edges = [(u, v) for u, v in edges if u != v] or [(nodes[0], nodes[1])]
    text = " ".join(f"{u}>{v}" for u, v in edges)
    if template == "indegree":
        node = rng.choice(nodes)
        return f"edges {text} ; in-degree of {node}", str(sum(v == node for _, v in edges))
    src, dst = rng.choice(nodes), rng.choice(nodes)
    reached, frontier = {src}, [src]
    while frontier:
        node_now = frontier.pop()
        for tail, head in edges:
            if tail == node_now and head not in reached:
                reached.add(head)
                frontier.append(head)
    return f"edges {text} ; is {dst} reachable from {src}", "yes" if dst in reached else "no"


class ToyWorld:
    """The finite problem space: rendering, answers, parsing, embeddings and categories.

    Args:
        num_difficulties: difficulty levels ``L``.
        num_variants: seeded variants ``V`` per (template, difficulty) cell.

    Attributes:
        num_templates: ``K`` (6).
        num_cells: ``K * L``.
        embedding_dim: width of :meth:`embed` (``K + L + 2``).

    Example:
        >>> w = ToyWorld(num_difficulties=3, num_variants=2)
        >>> q = w.question(0, 1, 0)
        >>> q, w.parse(q), w.answer(q)
        ('compute 4 + 11 + 5 ? [v0]', (0, 1, 0), '20')
        >>> tuple(w.embed([q]).shape)
        (1, 11)
    """

    num_templates = len(TEMPLATES)

    def __init__(self, num_difficulties: int = 6, num_variants: int = 8) -> None:
        for name, value in (("num_difficulties", num_difficulties), ("num_variants", num_variants)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        self.num_difficulties, self.num_variants = num_difficulties, num_variants
        self.num_cells = self.num_templates * num_difficulties
        self.embedding_dim = self.num_templates + num_difficulties + 2
        self._text: dict[tuple[int, int, int], str] = {}
        self._key: dict[str, tuple[int, int, int]] = {}
        self._answer: dict[str, str] = {}
        for t, name in enumerate(TEMPLATES):
            for d in range(num_difficulties):
                for v in range(num_variants):
                    text, ans = _render(name, d + 1, v)
                    text = f"{text} ? [v{v}]"  # variants of one cell stay distinct texts
                    self._text[(t, d, v)], self._key[text], self._answer[text] = text, (t, d, v), ans
        gen = torch.Generator().manual_seed(12345)
        self._variant_feat = 0.3 * torch.randn(num_variants, 2, generator=gen, dtype=torch.float64)

    def question(self, template: int, difficulty: int, variant: int) -> str:
        """The text of a problem (``difficulty`` is 0-based)."""
        return self._text[(template, difficulty, variant)]

    def parse(self, question: str) -> tuple[int, int, int]:
        """``(template, difficulty, variant)`` of a question of this world (0-based)."""
        if question not in self._key:
            raise ValueError(f"question is not a problem of this ToyWorld: {question!r}")
        return self._key[question]

    def answer(self, question: str) -> str:
        """The computed answer."""
        self.parse(question)
        return self._answer[question]

    def cells(self, questions: Sequence[str]) -> Tensor:
        """Cell index ``template * L + difficulty`` of each question (long ``(n,)``)."""
        keys = [self.parse(q) for q in questions]
        return torch.tensor([t * self.num_difficulties + d for t, d, _ in keys], dtype=torch.long)

    def categories(self, questions: Sequence[str]) -> Tensor:
        """Template index of each question (long ``(n,)``), the categories of coverage entropy."""
        return torch.tensor([self.parse(q)[0] for q in questions], dtype=torch.long)

    def embed(self, questions: Sequence[str]) -> Tensor:
        """One-hot template, one-hot difficulty and two small variant features (float64 ``(n, K + L + 2)``)."""
        out = torch.zeros(len(questions), self.embedding_dim, dtype=torch.float64)
        for i, q in enumerate(questions):
            t, d, v = self.parse(q)
            out[i, t] = 1.0
            out[i, self.num_templates + d] = 1.0
            out[i, -2:] = self._variant_feat[v]
        return out


class ToySolver(nn.Module):
    """A solver whose per-template skill grows with practice and decays without it.

    Args:
        world: the :class:`ToyWorld`.
        init_skill: starting skill of every template (difficulty units, 1-based).
        slope: steepness of the solve probability.
        gain: skill gained from one fresh problem at the skill level.
        width: difficulty distance over which practice helps (Gaussian width).
        forget: share of ``skill - floor`` lost per iteration.
        floor: skill that forgetting tends to.

    Example:
        >>> s = ToySolver(ToyWorld(num_difficulties=3, num_variants=2), init_skill=2.0)
        >>> round(float(s.solve_prob(torch.tensor([0]), torch.tensor([1]))[0]), 3)  # difficulty 2 at skill 2
        0.5
    """

    skill: Tensor
    practice: Tensor

    def __init__(
        self,
        world: ToyWorld,
        init_skill: float = 2.5,
        slope: float = 1.5,
        gain: float = 0.3,
        width: float = 1.0,
        forget: float = 0.1,
        floor: float = 1.5,
    ) -> None:
        super().__init__()
        if not (slope > 0 and gain >= 0 and width > 0 and 0 <= forget < 1):
            raise ValueError(
                f"need slope > 0, gain >= 0, width > 0, 0 <= forget < 1; got slope={slope}, gain={gain}, "
                f"width={width}, forget={forget}"
            )
        self.world = world
        self.slope, self.gain, self.width, self.forget, self.floor = slope, gain, width, forget, floor
        k, lv, v = world.num_templates, world.num_difficulties, world.num_variants
        self.register_buffer("skill", torch.full((k,), float(init_skill), dtype=torch.float64))
        self.register_buffer("practice", torch.zeros(k, lv, v, dtype=torch.float64))

    def solve_prob(self, templates: Tensor, difficulties: Tensor) -> Tensor:
        """Solve probability of (template, 0-based difficulty) pairs."""
        return torch.sigmoid(self.slope * (self.skill[templates] - (difficulties.to(torch.float64) + 1)))

    def answer(self, questions: Sequence[str], m: int, generator: torch.Generator) -> list[list[str]]:
        """``m`` sampled answers per question: the right one with the solve probability, else a wrong one."""
        if m < 2:
            raise ValueError(f"m (solver samples per question) must be >= 2, got m={m}")
        keys = [self.world.parse(q) for q in questions]
        probs = self.solve_prob(torch.tensor([k[0] for k in keys]), torch.tensor([k[1] for k in keys]))
        right = torch.rand(len(questions), m, generator=generator, dtype=torch.float64) < probs[:, None]
        wrong = torch.randint(1, 4, (len(questions), m), generator=generator)
        out = []
        for i, q in enumerate(questions):
            truth = self.world.answer(q)
            out.append([truth if bool(right[i, j]) else f"{truth}~{int(wrong[i, j])}" for j in range(m)])
        return out

    def reference(self, questions: Sequence[str]) -> list[str]:
        """The verified answers (the toy world has a checker)."""
        return [self.world.answer(q) for q in questions]

    def train_on(self, questions: Sequence[str]) -> None:
        """One iteration: forget, then practise on ``questions`` (diminishing gains on repeated problems)."""
        with torch.no_grad():
            self.skill -= self.forget * (self.skill - self.floor)
            self.practice *= 1.0 - self.forget  # memorised problems fade at the same rate
            delta = torch.zeros_like(self.skill)
            for q in questions:
                t, d, v = self.world.parse(q)
                closeness = math.exp(-((d + 1 - float(self.skill[t])) ** 2) / (2 * self.width**2))
                delta[t] += self.gain * closeness / (1.0 + float(self.practice[t, d, v]))
                self.practice[t, d, v] += 1.0
            self.skill += delta

    def evaluate(self) -> float:
        """Held-out score in points: mean solve probability over every (template, difficulty) cell x 100."""
        k, lv = self.world.num_templates, self.world.num_difficulties
        t = torch.arange(k).repeat_interleave(lv)
        d = torch.arange(lv).repeat(k)
        return 100.0 * float(self.solve_prob(t, d).mean())
