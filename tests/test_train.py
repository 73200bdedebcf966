"""The TinyChess trainer: its config, the samples it makes of games, and what training does.

Everything runs in this process (no worker pools): ``play_games`` plays the games and the
trainer runs on the CPU with a tiny network.
"""

from __future__ import annotations

import math
import time

import chess
import pytest
import torch

from asp.errors import ConfigError
from asp.tinychess import (
    MODEL,
    OPPONENT,
    GameRecord,
    ModelConfig,
    PlayConfig,
    TinyChess,
    encode_boards,
    legal_move_indices,
    move_index,
    play_games,
)
from asp.tinychess.moves import POLICY_SIZE
from asp.tinychess.opponents import RandomMover
from asp.tinychess.train import Samples, TrainConfig, Trainer, make_samples, pick_device

TINY = ModelConfig(hidden=16, blocks=0)
FOOLS_MATE = ["f2f3", "e7e5", "g2g4", "d8h4"]
# The position before Black's mating move d8h4 (after 1. f3 e5 2. g4), Black to move.
MATE_IN_ONE = "rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2"
METRIC_KEYS = {
    "loss/total",
    "loss/policy",
    "loss/value",
    "loss/entropy",
    "train/ratio_mean",
    "train/clip_fraction",
    "train/grad_norm",
    "train/samples",
    "train/replay_samples",
    "train/staleness_mean",
    "train/steps",
    "train/seconds",
}


def tiny(seed: int = 0) -> TinyChess:
    torch.manual_seed(seed)
    return TinyChess(TINY)


def record(
    moves: list[str],
    result: str,
    *,
    white: str = MODEL,
    black: str = MODEL,
    start: str = chess.STARTING_FEN,
    game_id: int = 0,
) -> GameRecord:
    """A hand-made game; the log-probability of ply i is -(i + 1) / 10, so each ply is recognisable."""
    return GameRecord(
        game_id=game_id,
        moves=moves,
        result=result,
        termination="checkmate" if result != "1/2-1/2" else "max_plies",
        start_fen=start,
        white=white,
        black=black,
        model_version=0,
        logprobs=[-(i + 1) / 10 for i in range(len(moves))],
    )


def replay(rec: GameRecord) -> list[tuple[chess.Board, chess.Move]]:
    """Every (position, move played there) of a game."""
    board = chess.Board(rec.start_fen)
    plies = []
    for uci in rec.moves:
        move = chess.Move.from_uci(uci)
        plies.append((board.copy(stack=False), move))
        board.push(move)
    return plies


def mover_is_model(rec: GameRecord, board: chess.Board) -> bool:
    return (rec.white if board.turn == chess.WHITE else rec.black) == MODEL


def white_z(rec: GameRecord) -> float:
    return {"1-0": 1.0, "0-1": -1.0, "1/2-1/2": 0.0}[rec.result]


def params(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


# -- TrainConfig -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("lr", 0.0),
        ("lr", -1e-3),
        ("lr", 1.5),
        ("lr", math.nan),
        ("lr", math.inf),
        ("lr", "0.001"),
        ("lr", True),
        ("weight_decay", -0.1),
        ("weight_decay", 2.0),
        ("clip", 0.0),
        ("clip", 11.0),
        ("value_coef", -1.0),
        ("entropy_coef", 10.5),
        ("outcome_gamma", 1.01),
        ("outcome_gamma", -0.1),
        ("max_grad_norm", 0.0),
        ("batch_size", 0),
        ("batch_size", 65537),
        ("batch_size", 32.0),
        ("batch_size", True),
        ("epochs", 0),
        ("epochs", 101),
        ("seed", -1),
        ("seed", 2**63),
        ("device", "tpu"),
        ("device", "CUDA"),
    ],
)
def test_train_config_rejects_a_bad_value_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=rf"TrainConfig\.{field}\b") as raised:
        TrainConfig(**{field: value})  # type: ignore[arg-type]
    assert isinstance(raised.value, ValueError)  # ConfigError is a ValueError too


def test_train_config_accepts_its_bounds() -> None:
    TrainConfig(lr=1.0, weight_decay=0.0, clip=10.0, value_coef=0.0, entropy_coef=0.0, max_grad_norm=1000.0)
    TrainConfig(outcome_gamma=0.0, gamma=0.0)
    TrainConfig(outcome_gamma=1.0, gamma=1.0)
    TrainConfig(batch_size=1, epochs=100, seed=2**63 - 1, device="cuda:1")
    TrainConfig(batch_size=65536, epochs=1, seed=0, weight_decay=1.0, lr=1, device="cpu")


def test_train_config_rejects_a_device_that_is_not_a_string() -> None:
    with pytest.raises(ConfigError, match=r"TrainConfig\.device"):
        TrainConfig(device=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("device", ["cuda:x", "cuda:"])
def test_train_config_rejects_a_cuda_device_without_a_number(device: str) -> None:
    with pytest.raises(ConfigError, match=r"TrainConfig\.device"):
        TrainConfig(device=device)


@pytest.mark.slow
def test_device_auto_picks_the_cpu_on_a_machine_without_cuda() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: auto picks it")
    assert pick_device("auto") == torch.device("cpu")
    assert pick_device() == torch.device("cpu")
    assert pick_device("cuda:1") == torch.device("cuda", 1)
    trainer = Trainer(tiny())  # default config: device auto
    assert trainer.cfg == TrainConfig()
    assert trainer.device == torch.device("cpu")
    assert all(p.device.type == "cpu" for p in trainer.model.parameters())


# -- make_samples ----------------------------------------------------------------------------


def test_self_play_makes_a_sample_of_every_ply_with_the_outcome_from_the_movers_side() -> None:
    rec = record(FOOLS_MATE, "0-1")
    samples = make_samples([rec], outcome_gamma=1.0)
    plies = replay(rec)
    assert isinstance(samples, Samples)
    assert len(samples) == 4
    # Black mated White: every White ply lost, every Black ply won.
    assert samples.z.tolist() == [-1.0, 1.0, -1.0, 1.0]
    assert samples.actions.tolist() == [move_index(m, b.turn) for b, m in plies]
    assert samples.old_logp.tolist() == pytest.approx(rec.logprobs)
    for i, (board, _) in enumerate(plies):
        legal = legal_move_indices(board)[1]
        assert samples.legal[i] == legal
        assert samples.actions[i].item() in samples.legal[i]
    assert torch.equal(samples.features, encode_boards([b for b, _ in plies]))


@pytest.mark.parametrize(
    ("white", "black", "plies", "z"),
    [
        (OPPONENT, MODEL, [1, 3], [1.0, 1.0]),  # the model is Black and mated White
        (MODEL, OPPONENT, [0, 2], [-1.0, -1.0]),  # the model is White and got mated
    ],
)
def test_against_an_opponent_only_the_models_plies_are_samples(
    white: str, black: str, plies: list[int], z: list[float]
) -> None:
    rec = record(FOOLS_MATE, "0-1", white=white, black=black)
    samples = make_samples([rec], outcome_gamma=1.0)
    positions = replay(rec)
    assert len(samples) == len(plies)
    assert samples.z.tolist() == z
    assert samples.old_logp.tolist() == pytest.approx([rec.logprobs[i] for i in plies])
    assert samples.actions.tolist() == [move_index(positions[i][1], positions[i][0].turn) for i in plies]
    assert torch.equal(samples.features, encode_boards([positions[i][0] for i in plies]))


def test_a_game_from_a_position_with_black_to_move_counts_black_as_the_first_mover() -> None:
    won = make_samples([record(["d8h4"], "0-1", start=MATE_IN_ONE)])
    assert len(won) == 1 and won.z.tolist() == [1.0]
    assert won.actions.tolist() == [move_index(chess.Move.from_uci("d8h4"), chess.BLACK)]
    # The model is White here and never moves: no sample at all.
    assert len(make_samples([record(["d8h4"], "0-1", start=MATE_IN_ONE, black=OPPONENT)])) == 0


def test_material_gain_credits_the_capture_and_its_discounted_lead_up() -> None:
    # 1. e4 d5 2. exd5 Qxd5: White wins a pawn at ply 2, Black wins it back at ply 3.
    samples = make_samples([record(["e2e4", "d7d5", "e4d5", "d8d5"], "1/2-1/2")], gamma=0.5)
    # White's lead after each ply: 0, 0, +1, 0. White's discounted gain from ply t on:
    # g3 = -1, g2 = 1 + 0.5 * g3 = 0.5, g1 = 0.5 * g2 = 0.25, g0 = 0.5 * g1 = 0.125;
    # each sample sees it from its mover's side (Black: the negation).
    assert samples.material.tolist() == pytest.approx([0.125, -0.25, 0.5, 1.0])
    undiscounted = make_samples([record(["e2e4", "d7d5", "e4d5"], "1/2-1/2")], gamma=1.0)
    assert undiscounted.material.tolist() == [1.0, -1.0, 1.0]  # the final lead, seen from each mover


def test_the_outcome_is_discounted_by_the_plies_to_the_end() -> None:
    # Fool's mate, 4 plies: the mating move gets the whole win, each earlier ply half as much.
    samples = make_samples([record(FOOLS_MATE, "0-1")], outcome_gamma=0.5)
    assert samples.z.tolist() == [-0.125, 0.25, -0.5, 1.0]
    assert make_samples([record(FOOLS_MATE, "0-1")], outcome_gamma=1.0).z.tolist() == [-1.0, 1.0, -1.0, 1.0]
    # The model as Black only: its plies 1 and 3 are 2 plies and 0 plies from the end.
    black = make_samples([record(FOOLS_MATE, "0-1", white=OPPONENT)], outcome_gamma=0.5)
    assert black.z.tolist() == [0.25, 1.0]


def test_a_draw_is_zero_for_both_sides() -> None:
    samples = make_samples([record(["e2e4", "e7e5", "g1f3"], "1/2-1/2")])
    assert samples.z.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("against_random", [False, True])
def test_samples_of_played_games_match_the_games(against_random: bool) -> None:
    opponent = RandomMover() if against_random else None
    cfg = PlayConfig(n_games=6, max_plies=30, adjudication_margin=1, seed=3)
    records, _ = play_games(tiny(), opponent, cfg)
    samples = make_samples(records, outcome_gamma=0.9)

    want_z, want_actions, want_logp = [], [], []
    for rec in records:
        for i, (board, move) in enumerate(replay(rec)):
            if mover_is_model(rec, board):
                z = white_z(rec) if board.turn == chess.WHITE else -white_z(rec)
                want_z.append(z * 0.9 ** (len(rec.moves) - 1 - i))
                want_actions.append(move_index(move, board.turn))
                want_logp.append(rec.logprobs[i])
    model_plies = sum(len(r.moves) for r in records)
    if against_random:
        # The model plays White in even games and Black in odd ones: about half the plies.
        model_plies = sum((len(r.moves) + (r.game_id % 2 == 0)) // 2 for r in records)
    assert len(samples) == len(want_z) == model_plies > 0
    assert samples.z.tolist() == pytest.approx(want_z)
    assert samples.actions.tolist() == want_actions
    assert samples.old_logp.tolist() == pytest.approx(want_logp)
    assert all(a in legal for a, legal in zip(samples.actions.tolist(), samples.legal, strict=True))
    assert samples.features.shape[0] == len(samples)
    assert any(r.result != "1/2-1/2" for r in records)  # some outcome to learn from


_BLACK_FIRST = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"


@pytest.mark.parametrize(
    ("options", "against_random"),
    [
        ({}, False),
        ({"temperature": 0}, False),
        ({"mask_illegal": False}, False),
        ({"openings": (_BLACK_FIRST,)}, False),
        ({"opponent_temperature": 1.0, "openings": (chess.STARTING_FEN, _BLACK_FIRST)}, True),
    ],
)
@pytest.mark.slow
def test_samples_read_from_play_data_equal_the_samples_of_a_replay(
    options: dict[str, object], against_random: bool
) -> None:
    """The trainer reads what the worker encoded for play (PlyData) instead of replaying games:
    every tensor and every legal-move list is exactly what the replay gives."""
    opponent = RandomMover() if against_random else None
    records, _ = play_games(tiny(), opponent, PlayConfig(n_games=8, max_plies=80, seed=5, **options))  # type: ignore[arg-type]
    assert all(r.samples is not None for r in records)
    read = make_samples(records)
    replayed = make_samples([r.plain() for r in records])
    assert len(read) == len(replayed) > 0
    for name in ("features", "actions", "old_logp", "z", "material"):
        a, b = getattr(read, name), getattr(replayed, name)
        assert a.dtype == b.dtype and torch.equal(a, b), name
    assert read.legal == replayed.legal


def test_the_legal_moves_of_any_minibatch_are_exactly_each_samples_legal_moves() -> None:
    records, _ = play_games(tiny(), None, PlayConfig(n_games=6, max_plies=60, seed=2))
    samples = make_samples(records)
    legal = samples.legal
    generator = torch.Generator().manual_seed(0)
    for size in (1, 7, len(samples)):
        index = torch.randperm(len(samples), generator=generator)[:size]
        moves, valid = samples.legal_moves(index)
        assert moves.shape == valid.shape == (size, max(len(legal[i]) for i in index.tolist()))
        for row, i in enumerate(index.tolist()):
            assert moves[row][valid[row]].tolist() == legal[i]
            assert not moves[row][~valid[row]].any()


def test_a_step_learns_what_the_softmax_over_the_legal_moves_of_the_whole_vocabulary_gives() -> None:
    # The trainer reads only the legal moves' logits. The reference below is the textbook form:
    # illegal logits masked to -inf over all POLICY_SIZE moves. One step of each from the same
    # weights must land on the same weights.
    records, _ = play_games(tiny(), None, PlayConfig(n_games=4, max_plies=40, seed=3))
    cfg = TrainConfig(device="cpu", batch_size=4096, lr=1e-2)
    trained = Trainer(tiny(), cfg)
    metrics = trained.train(records)
    assert metrics["train/steps"] == 1
    reference = tiny()
    optimizer = torch.optim.AdamW(reference.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    samples = make_samples(records)
    mask = torch.zeros(len(samples), POLICY_SIZE, dtype=torch.bool)
    for row, moves in enumerate(samples.legal):
        mask[row, moves] = True
    logits, value = reference(samples.features)
    logp_all = torch.log_softmax(logits.masked_fill(~mask, -math.inf), dim=1)
    logp = logp_all.gather(1, samples.actions.unsqueeze(1)).squeeze(1)
    ret = samples.z + cfg.material_weight * samples.material
    advantage = ret - value.detach()
    ratio = torch.exp(logp - samples.old_logp)
    clipped = torch.clamp(ratio, 1 - cfg.clip, 1 + cfg.clip)
    policy_loss = -torch.min(ratio * advantage, clipped * advantage).mean()
    value_loss = torch.mean((value - ret.clamp(-1.0, 1.0)) ** 2)
    entropy = -(logp_all.exp() * logp_all.masked_fill(~mask, 0.0)).sum(dim=1).mean()
    loss = policy_loss + cfg.value_coef * value_loss - cfg.entropy_coef * entropy
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(reference.parameters(), cfg.max_grad_norm)
    optimizer.step()
    assert metrics["loss/entropy"] == pytest.approx(entropy.item(), rel=1e-5)
    assert metrics["loss/total"] == pytest.approx(loss.item(), rel=1e-4, abs=1e-6)
    for (name, a), b in zip(trained.model.state_dict().items(), reference.state_dict().values(), strict=True):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-6), name


@pytest.mark.slow
def test_play_data_is_compact_and_can_be_left_out() -> None:
    records, stats = play_games(tiny(), None, PlayConfig(n_games=4, max_plies=40, seed=1))
    for record in records:
        data = record.samples
        assert data is not None
        assert data.plies.tolist() == list(range(len(record.moves)))  # self-play: every ply
        assert len(data.leads) == len(record.moves) + 1 and data.leads[0] == 0
        assert data.nbytes < 250 * len(record.moves)  # against 3,868 bytes a ply as float features
    records, _ = play_games(tiny(), None, PlayConfig(n_games=4, max_plies=40, seed=1, samples=False))
    assert all(r.samples is None for r in records)


# -- Trainer.train ---------------------------------------------------------------------------


def test_train_returns_finite_metrics_and_changes_every_parameter() -> None:
    model = tiny()
    records, _ = play_games(model, None, PlayConfig(n_games=4, max_plies=10, seed=1))
    before = params(model)
    cfg = TrainConfig(device="cpu", batch_size=16, epochs=2)
    trainer = Trainer(model, cfg)
    began = time.perf_counter()
    metrics = trainer.train(records)
    wall = time.perf_counter() - began

    assert set(metrics) == METRIC_KEYS
    assert all(math.isfinite(v) for v in metrics.values())
    assert metrics["train/samples"] == 40
    assert metrics["train/steps"] == 2 * math.ceil(40 / 16) == trainer.steps
    assert 0 < metrics["train/seconds"] <= wall  # the call's own clock runs inside the wall time around it
    # Every figure is a mean over the same steps, so the total is made of the parts as in one step.
    parts = metrics["loss/policy"] + cfg.value_coef * metrics["loss/value"] - cfg.entropy_coef * metrics["loss/entropy"]
    assert metrics["loss/total"] == pytest.approx(parts, rel=1e-4, abs=1e-6)
    assert metrics["loss/value"] >= 0  # a mean of squares
    # The entropy of a distribution over the legal moves: above 0 for an untrained net, at most log(moves).
    most_moves = max(len(legal_move_indices(board)[1]) for rec in records for board, _ in replay(rec))
    assert 0 < metrics["loss/entropy"] <= math.log(most_moves) + 1e-5  # float32 slack
    assert 0 <= metrics["train/clip_fraction"] <= 1
    after = model.state_dict()
    unchanged = [k for k, v in before.items() if torch.equal(v, after[k])]
    assert unchanged == []
    assert not model.training  # left in eval mode, ready to play

    trainer.train(records)
    assert trainer.steps == 2 * metrics["train/steps"]


def test_the_probability_ratio_is_one_on_fresh_data() -> None:
    model = tiny()
    records, _ = play_games(model, RandomMover(), PlayConfig(n_games=8, max_plies=20, seed=2))
    metrics = Trainer(model, TrainConfig(device="cpu", epochs=1, batch_size=65536)).train(records)
    assert metrics["train/steps"] == 1
    # The single step sees the weights that played: pi_new / pi_old = 1 up to float noise.
    assert metrics["train/ratio_mean"] == pytest.approx(1.0, abs=1e-4)
    assert metrics["train/clip_fraction"] == 0.0


def test_no_model_plies_means_no_step_and_no_change() -> None:
    model = tiny()
    before = params(model)
    trainer = Trainer(model, TrainConfig(device="cpu"))
    metrics = trainer.train([record(["d8h4"], "0-1", start=MATE_IN_ONE, black=OPPONENT)])
    assert metrics["train/samples"] == 0 and metrics["train/steps"] == 0
    assert not {k for k in metrics if k.startswith("loss/")}
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())


def test_training_is_deterministic_for_a_seed() -> None:
    records, _ = play_games(tiny(), None, PlayConfig(n_games=4, max_plies=12, seed=4))
    trained = []
    for _ in range(2):
        model = tiny(seed=7)
        Trainer(model, TrainConfig(device="cpu", batch_size=8, seed=5)).train(records)
        trained.append(model.state_dict())
    assert all(torch.equal(trained[0][k], trained[1][k]) for k in trained[0])


def _mate_probability(model: TinyChess) -> float:
    board = chess.Board(MATE_IN_ONE)
    _, legal = legal_move_indices(board)
    mate = move_index(chess.Move.from_uci("d8h4"), board.turn)
    with torch.no_grad():
        logits, _ = model(encode_boards([board]))
    return torch.softmax(logits[0, legal], dim=0)[legal.index(mate)].item()


@pytest.mark.slow
def test_rewarded_wins_against_a_random_mover_make_the_winning_move_likelier() -> None:
    # Games from the mate-in-one position, cut after one ply: the model (Black in odd games)
    # wins when it plays d8h4 and draws otherwise. Training on them, iteration after
    # iteration with freshly played games, must teach it the mate: a user sees the win rate
    # against the random mover rise.
    model = tiny()
    trainer = Trainer(model, TrainConfig(device="cpu", lr=1e-2, epochs=2))
    start = _mate_probability(model)
    wins = []
    for iteration in range(8):
        cfg = PlayConfig(n_games=64, max_plies=1, openings=(MATE_IN_ONE,), seed=iteration, first_game=64 * iteration)
        records, stats = play_games(model, RandomMover(), cfg)
        wins.append(sum(r.model_score() == 1.0 for r in records))
        trainer.train(records)
    end = _mate_probability(model)
    assert start < 0.05  # about 1 in the 30 legal moves at first
    assert end > 0.2 and end > 4 * start, (start, end)
    assert sum(wins[-2:]) > 2 * sum(wins[:2]), wins


def _value_loss(model: TinyChess, samples: Samples) -> float:
    with torch.no_grad():
        _, value = model(samples.features)
    return torch.mean((value - samples.z) ** 2).item()


def test_training_on_a_fixed_batch_lowers_its_value_loss() -> None:
    model = tiny()
    cfg = PlayConfig(n_games=16, max_plies=24, adjudication_margin=1, seed=6)
    records, _ = play_games(model, RandomMover(), cfg)
    samples = make_samples(records)
    assert samples.z.abs().sum() > 0  # decisive games: something for the value head to learn
    trainer = Trainer(model, TrainConfig(device="cpu", lr=1e-2, entropy_coef=0.0))
    before = _value_loss(model, samples)
    for _ in range(6):
        trainer.train(records)
    after = _value_loss(model, samples)
    assert after < 0.7 * before, (before, after)
