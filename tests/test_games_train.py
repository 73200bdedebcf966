"""The trainer of any game (asp.games.train): the targets it reads from records, the
symmetries it applies, its replay window, and that it learns."""

from __future__ import annotations

import math
import random
import tracemalloc

import numpy as np
import pytest
import torch

from asp.connect4 import ConnectFour
from asp.connect4.game import mirror_features
from asp.errors import ConfigError
from asp.games import PlayConfig, Record, TrainConfig, Trainer, play_games
from asp.games import train as train_module
from asp.games.protocol import unpacked
from asp.games.records import MODEL, Samples
from asp.games.train import TrainSamples, _concat, _gathered, make_samples, merged
from asp.search import SearchConfig

GAME = ConnectFour()


def self_play(n: int, *, seed: int = 0, search: int = 4) -> list[Record]:
    torch.manual_seed(seed)
    return play_games(GAME.network(), None, PlayConfig(GAME, n_games=n, seed=seed, search=SearchConfig(search, 7)))[0]


def _four_plies(heuristic: list[float]) -> Record:
    """A game of four plies that the first player won, every ply a sample, with ``heuristic``."""
    samples = Samples(
        plies=np.arange(4, dtype=np.int32),
        movers=np.array([0, 1, 0, 1], dtype=np.int8),
        features=np.zeros((4, 1), np.float32),
        legal=np.zeros(4, np.int32),
        legal_counts=np.ones(4, np.int32),
        policy=np.ones(4, np.float32),
        heuristic=np.array(heuristic, dtype=np.float32),
    )
    return Record(0, "", [0, 0, 0, 0], 1.0, "rules", MODEL, MODEL, 0, samples=samples)


def test_the_value_target_discounts_the_result_and_adds_the_heuristic_the_mover_will_have() -> None:
    record = _four_plies([0.0, 0.0, 1.0, 1.0, 3.0])  # for the first player: +1 after ply 1, +2 after ply 3
    assert make_samples([record]).z.tolist() == [1.0, -1.0, 1.0, -1.0]  # the defaults: the result alone
    cfg = TrainConfig(outcome_gamma=0.5, heuristic_weight=0.1, heuristic_gamma=0.5)
    # By hand: the result 1 * 0.5**(plies to the end), from the mover's side; plus 0.1 times the
    # mover's heuristic now plus its changes ahead discounted by 0.5 a ply (changes +1 at ply 1,
    # +2 at ply 3); the last clipped at -1.
    expected = [0.125 + 0.1 * (0 + 0.5 * 1 + 0.125 * 2), -0.25 - 0.1 * (0 + 1 + 0.5 * 0 + 0.25 * 2),
                0.5 + 0.1 * (1 + 0 + 0.5 * 2), max(-1.0, -1.0 - 0.1 * (1 + 2))]  # fmt: skip
    assert make_samples([record], cfg).z.tolist() == pytest.approx(expected)
    no_heuristic = _four_plies([])
    assert make_samples([no_heuristic], cfg).z.tolist() == [0.125, -0.25, 0.5, -1.0]


def test_each_ply_learns_the_result_from_its_movers_side() -> None:
    records = self_play(6)
    samples = make_samples(records)
    start = 0
    for record in records:
        plies = len(record.actions)
        z = samples.z[start : start + plies].tolist()
        first = 2 * record.result - 1
        assert z == [first if ply % 2 == 0 else -first for ply in range(plies)]
        start += plies
    assert len(samples) == start
    assert samples.versions.tolist() == [0] * start


def test_records_without_samples_are_refused() -> None:
    torch.manual_seed(0)
    records, _ = play_games(GAME.network(), None, PlayConfig(GAME, n_games=1, samples=False))
    with pytest.raises(ValueError, match="PlayConfig.samples=True"):
        make_samples(records)


class _Always:
    """A random stream whose randrange always draws ``k``: the trainer's choice of symmetry."""

    def __init__(self, k: int) -> None:
        self.k = k

    def randrange(self, n: int) -> int:
        return self.k

    def shuffle(self, order: list[int]) -> None:
        pass


def test_a_sample_seen_through_the_mirror_has_the_mirrored_position_and_target() -> None:
    records = self_play(2, search=8)
    samples = make_samples(records)
    trainer = Trainer(GAME.network(), GAME, TrainConfig(device="cpu"))
    rows = list(range(len(samples)))
    trainer.rng = _Always(0)  # type: ignore[assignment]
    plain = trainer._batch(samples, rows)
    trainer.rng = _Always(1)  # type: ignore[assignment]
    mirrored = trainer._batch(samples, rows)
    assert torch.equal(mirrored[0], mirror_features(plain[0]))
    # Each legal action becomes its mirror image (column c: 6 - c), with its target.
    actions, target, valid = plain[1:4]
    assert torch.equal(mirrored[1][valid], 6 - actions[valid])
    assert torch.equal(mirrored[2], target) and torch.equal(mirrored[3], valid)
    assert torch.equal(mirrored[4], plain[4])
    # the image of a position is a position of the game, encoded as the game encodes it
    board = GAME.parse_state("1122")
    image = GAME.parse_state("7766")
    assert torch.equal(mirror_features(GAME.encode([board])), GAME.encode([image]))


def test_the_policy_loss_is_the_cross_entropy_to_the_targets_over_each_position_s_legal_actions() -> None:
    records = self_play(3, search=8)
    samples = make_samples(records)
    torch.manual_seed(0)
    trainer = Trainer(GAME.network(), GAME, TrainConfig(device="cpu", symmetries=False))
    rows = list(range(len(samples)))
    with torch.no_grad():
        logits, _ = trainer.model(unpacked(GAME, samples.features.numpy()))
    expected = []
    for row in rows:
        legal = samples.legal_flat[samples.legal_start[row] : samples.legal_start[row + 1]]
        target = samples.targets[samples.legal_start[row] : samples.legal_start[row + 1]]
        expected.append(-(target / target.sum() * torch.log_softmax(logits[row, legal], 0)).sum())
    assert trainer._step(samples, rows)["loss/policy"] == pytest.approx(float(torch.stack(expected).mean()), rel=1e-5)


def test_the_replay_window_keeps_the_last_calls_and_comes_back_from_its_state() -> None:
    calls = [self_play(3, seed=s) for s in range(3)]
    cfg = TrainConfig(device="cpu", replay=2)
    torch.manual_seed(0)
    trainer = Trainer(GAME.network(), GAME, cfg)
    sizes = [len(make_samples(records)) for records in calls]
    seen = [trainer.train(records)["train/replay_samples"] for records in calls[:2]]
    assert seen == [sizes[0], sizes[0] + sizes[1]]
    state = trainer.window_state()
    again = Trainer(GAME.network(), GAME, cfg)
    again.load_window(state)
    assert trainer.train(calls[2])["train/replay_samples"] == sizes[1] + sizes[2]
    assert again.train(calls[2])["train/replay_samples"] == sizes[1] + sizes[2]


@pytest.mark.slow
def test_training_fits_the_policy_targets_and_results_it_is_given() -> None:
    records = self_play(16, search=8)
    torch.manual_seed(1)
    trainer = Trainer(GAME.network(), GAME, TrainConfig(device="cpu", replay=1, symmetries=False))
    first = trainer.train(records)
    for _ in range(30):
        last = trainer.train(records)
    assert all(math.isfinite(v) for k, v in last.items() if k.startswith("loss/"))
    assert last["loss/policy"] < first["loss/policy"] and last["loss/value"] < first["loss/value"] / 2


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("lr", 0.0, "TrainConfig.lr"),
        ("replay", 0, "TrainConfig.replay must be an int in 1..64, got 0"),
        ("symmetries", 1, "TrainConfig.symmetries"),
        ("value_mix", 1.5, "TrainConfig.value_mix"),
        ("lr_final", 0.0, "TrainConfig.lr_final"),
        ("merge_repeats", "yes", "TrainConfig.merge_repeats"),
        ("device", "tpu", "TrainConfig.device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got 'tpu'"),
    ],
)
def test_a_bad_setting_is_refused_by_name(field: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
        TrainConfig(**{field: value})  # type: ignore[arg-type]


def test_symmetries_are_drawn_per_sample() -> None:
    records = self_play(4, search=8)
    samples = make_samples(records)
    trainer = Trainer(GAME.network(), GAME, TrainConfig(device="cpu"))
    trainer.rng = random.Random(0)
    features = trainer._batch(samples, list(range(len(samples))))[0]
    mirrored = [not torch.equal(f, g) for f, g in zip(features, samples.features, strict=True)]
    assert 0 < sum(mirrored) < len(mirrored)


def test_value_mix_blends_the_result_with_the_value_each_ply_s_search_found() -> None:
    record = _four_plies([])
    assert record.samples is not None
    record.samples.values = np.array([0.5, np.nan, -0.5, 0.0], dtype=np.float32)  # ply 1 was not searched
    cfg = TrainConfig(value_mix=0.25)
    # 0.75 times the result from the mover's side plus 0.25 times the search's value; the result alone at ply 1
    assert make_samples([record], cfg).z.tolist() == pytest.approx([0.875, -1.0, 0.625, -0.75])
    assert make_samples([record]).z.tolist() == [1.0, -1.0, 1.0, -1.0]  # value_mix 0: the result alone


def test_self_play_records_the_search_s_root_value_of_each_kept_ply() -> None:
    records = self_play(2, search=8)
    for record in records:
        assert record.samples is not None
        values = record.samples.values
        assert len(values) == len(record.actions) and np.all(np.abs(values) <= 1.0)
        if record.result != 0.5:
            assert values[-1] == 1.0  # the search saw the winning move as a win
    torch.manual_seed(0)
    (plain,) = play_games(GAME.network(), None, PlayConfig(GAME, n_games=1))[0]
    assert plain.samples is not None and np.isnan(plain.samples.values).all()  # no search, no value


def test_repeated_positions_train_once_with_their_targets_averaged() -> None:
    records = self_play(8, search=4)
    samples = make_samples(records)
    once = merged(samples)
    starts = {tuple(f.tolist()) for f in samples.features}
    assert len(once) == len(starts) < len(samples)  # every game starts from the empty board
    first = [i for i, f in enumerate(samples.features) if not f.any()]  # the empty board, once per game
    assert len(first) == 8 and not once.features[0].any()
    assert float(once.z[0]) == pytest.approx(float(samples.z[first].mean()))
    targets = torch.stack([samples.targets[samples.legal_start[i] : samples.legal_start[i + 1]] for i in first])
    assert once.targets[: int(once.legal_start[1])].tolist() == pytest.approx(targets.mean(0).tolist())
    assert once.legal_flat[: int(once.legal_start[1])].tolist() == list(range(7))
    trainer = Trainer(GAME.network(), GAME, TrainConfig(device="cpu", merge_repeats=True))
    assert trainer.train(records)["train/replay_samples"] == len(once)


def _window(parts: int, rows: int, *, seed: int) -> list[TrainSamples]:
    """``parts`` parts of ``rows`` samples of 4-byte positions, one in three a repeat of a
    position of any part (the same legal actions), 1 to 40 legal actions each."""
    rng = np.random.default_rng(seed)
    pool = [(rng.integers(0, 255, 4, dtype=np.uint8), rng.permutation(64)[: rng.integers(1, 41)]) for _ in range(rows)]
    window = []
    for _ in range(parts):
        drawn = [pool[int(rng.integers(len(pool)))] if rng.random() < 1 / 3 else
                 (rng.integers(0, 255, 4, dtype=np.uint8), rng.permutation(64)[: rng.integers(1, 41)])
                 for _ in range(rows)]  # fmt: skip
        counts = torch.tensor([len(legal) for _, legal in drawn])
        start = torch.zeros(rows + 1, dtype=torch.int64)
        torch.cumsum(counts, 0, out=start[1:])
        window.append(TrainSamples(
            features=torch.from_numpy(np.stack([features for features, _ in drawn])),
            legal_flat=torch.from_numpy(np.concatenate([legal for _, legal in drawn]).astype(np.int64)),
            legal_start=start,
            targets=torch.from_numpy(rng.random(int(start[-1]), dtype=np.float32)),
            z=torch.from_numpy(rng.uniform(-1, 1, rows).astype(np.float32)),
            versions=torch.from_numpy(rng.integers(0, 9, rows)),
        ))  # fmt: skip
    return window


def test_a_window_merged_part_by_part_is_its_concatenation_merged() -> None:
    for seed in range(5):
        window = _window(1 + seed % 4, 50, seed=seed)
        once = merged(*window)
        whole = merged(_concat(window))
        assert len(once) < sum(len(part) for part in window)
        for name in TrainSamples.__dataclass_fields__:
            assert torch.equal(getattr(once, name), getattr(whole, name)), name


def test_merging_a_window_takes_little_memory_beyond_its_result() -> None:
    window = _window(4, 5000, seed=0)
    size = sum(sum(t.numel() * t.element_size() for t in part.state().values()) for part in window)
    tracemalloc.start()
    try:
        once = merged(*window)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    made = sum(t.numel() * t.element_size() for t in once.state().values())
    # beside the result, a few ints a sample (the positions' keys and groups), never a copy of the window
    assert peak - made < size, (peak, made, size)


def test_a_batch_drawn_from_the_window_s_parts_is_the_batch_of_their_concatenation() -> None:
    window = [make_samples(self_play(2, seed=seed)) for seed in range(3)]
    trainer = Trainer(GAME.network(), GAME, TrainConfig(device="cpu"))  # its symmetry drawn for each row
    rows = random.Random(0).sample(range(sum(len(part) for part in window)), 50)
    trainer.rng.seed(1)
    drawn = trainer._batch(*_gathered(window, rows))
    trainer.rng.seed(1)
    whole = trainer._batch(_concat(window), rows)
    assert all(torch.equal(a, b) for a, b in zip(drawn, whole, strict=True))


def test_training_never_copies_the_whole_replay_window(monkeypatch: pytest.MonkeyPatch) -> None:
    copied: list[int] = []

    def concat(parts: list[TrainSamples]) -> TrainSamples:
        copied.append(sum(len(part) for part in parts))
        return _concat(parts)

    monkeypatch.setattr(train_module, "_concat", concat)
    records = self_play(4)
    trainer = Trainer(GAME.network(), GAME, TrainConfig(device="cpu", replay=3, batch_size=16))
    for _ in range(3):
        metrics = trainer.train(records)
    assert metrics["train/replay_samples"] == 3 * len(make_samples(records)) > 16
    assert copied and max(copied) <= 16  # the rows of a batch, never the window's


def test_the_learning_rate_falls_along_a_half_cosine_over_the_calls_planned() -> None:
    records = self_play(1)
    trainer = Trainer(GAME.network(), GAME, TrainConfig(device="cpu", lr=1e-3, lr_final=1e-4), calls=3)
    rates = [trainer.train(records)["train/lr"] for _ in range(4)]
    assert rates == pytest.approx([1e-3, 5.5e-4, 1e-4, 1e-4])
    assert trainer.optimizer.param_groups[0]["lr"] == pytest.approx(1e-4)
    assert Trainer(GAME.network(), GAME, TrainConfig(lr_final=1e-4)).learning_rate() == 2e-3  # no plan: constant
