"""Debug a hung worker from asp's log alone: one shard hangs, asp says where, retries, finishes.

The play function is :func:`asp.testing.fault_play`, told to hang (an endless loop in Python)
in the shard that holds game ``--fault-game``, the first time only (``once=True``). Run::

    python examples/debug_a_hang.py                  # stall_timeout 2 s; try --stall-timeout 5

What the log says (a real run, trimmed: dates, line numbers and some fields cut, paths shortened, lines
wrapped)::

    11:48:23.561 [info     ] pool_started    pids=[2266, 2269] seconds=12.143 workers=2
    11:48:23.995 [info     ] shard_done      attempt=0 games=2 pid=2266 plies=20 seconds=0.243 shard=0
    [... shards 2 and 3 done by pid 2266 too ...]
    11:48:26.150 [error    ] worker_stalled  attempt=0 model_version=0 pid=2269 plies=11 process=2221
                                             publication=1 seconds_without_progress=2.09 shard=1 slot=1
    Thread 0x00007f88c4c286c0 (most recent call first):
      File "asp/backends/worker.py", line ... in watch
      File ".../threading.py", line ... in run
      [...]
    Current thread 0x00007f88e741ab80 (most recent call first):
      File "asp/testing.py", line ... in _misbehave
      File "asp/testing.py", line ... in _begin
      File "asp/testing.py", line ... in fault_play
      File "asp/backends/worker.py", line ... in play_task
      File "asp/backends/worker.py", line ... in run_shard
      File ".../concurrent/futures/process.py", line ... in _process_worker
      [...]
    11:48:26.223 [info     ] worker_killed   pid=2269 reason='worker 2269 stalled: no progress for 2.1 s'
                                             slot=1 worker=2
    11:48:26.224 [warning  ] shard_retried   attempt=0 reason='worker 2269 stalled: no progress for 2.1 s'
                                             shard=1 traceback='Thread 0x00007f88c4c286c0 [...]'
    11:48:26.243 [info     ] worker_respawning pid=2278 slot=1
    11:48:26.462 [info     ] shard_done      attempt=1 games=2 pid=2266 plies=20 seconds=0.213 shard=1
    11:48:28.524 [info     ] selfplay_closed
    played 8 games (ids 0..7) in 2.7 s; retries 1, pool respawns 1

How to read ``worker_stalled``, step by step:

1. ``pid`` is the worker process whose progress counter stopped moving (compare with
   ``pool_started pids=[...]``) and ``slot`` its place in the pool; ``process`` is the
   coordinator's own pid.
2. ``shard`` is the index of the shard within the call and ``attempt`` which try it was (0 is
   the first run). Run with ``--log-level debug`` to see ``shard_dispatched`` with the shard's
   ``first_game`` and ``games``: here shard 1 holds games 2 and 3.
3. ``seconds_without_progress`` is how long the counter had been still: just over
   ``stall_timeout``. A worker that is busy but never calls :func:`asp.heartbeat` reads the same.
4. ``plies`` is what the shard had reported before it went quiet: 11, one for loading the
   weights and one whole game of 10 heartbeats. So game 2 finished and the shard stopped as
   game 3 began.
5. The stack is every thread of that worker (faulthandler), each block "most recent call
   first": the first frame under a thread's header is where that thread is now. Find the
   thread whose frames pass through your play_fn (``fault_play`` here): its top frame,
   ``_misbehave`` in asp/testing.py (the ``time.sleep`` inside ``while True``; the log gives
   its line), is where it hung. The thread whose top frame is ``watch`` in asp/backends/worker.py is asp's own
   ``asp-parent-watchdog`` (faulthandler prints no thread names); it sleeps there by design.
   "Current thread" only names the thread that handled the signal.

Then asp kills that worker only (``worker_killed``; the other one keeps playing),
``shard_retried`` repeats the reason and the stack, a replacement starts in its slot
(``worker_respawning``), the shard runs again (``attempt=1``, here on the healthy worker,
which was free first) and the call returns as usual, with ``retries`` and ``respawns`` in its
stats. Had every attempt hung, the call would raise :class:`asp.ShardFailed` after
``retries + 1`` attempts, with the last stack in its ``traceback``.

What to do next:

* If the top frame is a loop or a wait that should end, that is your bug. Reproduce it without
  the pool: call your play_fn in one process with the shard's config (``first_game``,
  ``n_games`` from ``shard_dispatched``) under a debugger. That replays the same games when
  they are deterministic in ``(seed, game_id)``, as :func:`asp.games.play_games` games are.
* If it is honest work that takes longer than ``stall_timeout`` between heartbeats (a big
  network call, a long search), call ``asp.heartbeat()`` inside that work, or raise
  ``stall_timeout``.
* If the top frame is a blocking call into C (a lock, a queue, I/O), the Python stack stops at
  the line that made the call; ``FaultConfig(fault="hang_in_c")`` shows what that looks like.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile

import asp
from asp.testing import FaultConfig, fault_play
from asp.tinychess import ModelConfig, TinyChess


async def main(args: argparse.Namespace) -> None:
    asp.configure_logging(fmt="console", level=args.log_level)
    # fault_play only sums the model's parameters: the smallest TinyChess will do.
    model = TinyChess(ModelConfig(hidden=8, blocks=0, value_hidden=1))
    with tempfile.TemporaryDirectory(prefix="asp-debug-a-hang-") as marker_dir:
        cfg = FaultConfig(
            n_games=args.games,
            plies=args.plies,
            delay=args.delay,
            fault="hang",
            fault_game=args.fault_game,
            once=True,  # the first attempt hangs, the retry plays normally
            marker_dir=marker_dir,
        )
        async with asp.SelfPlay(
            workers=args.workers,
            play_fn=fault_play,
            shard_games=args.shard_games,
            stall_timeout=args.stall_timeout,
        ) as selfplay:
            records, stats = await selfplay.play(model, None, cfg)
    print(
        f"played {len(records)} games (ids {records[0].game_id}..{records[-1].game_id}) in "
        f"{stats['seconds']:.1f} s; retries {stats['retries']}, pool respawns {stats['respawns']}"
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--games", type=int, default=8, help="heartbeat games in the call")
    parser.add_argument("--plies", type=int, default=10, help="heartbeats per game")
    parser.add_argument("--delay", type=float, default=0.01, help="seconds between heartbeats")
    parser.add_argument("--fault-game", type=int, default=3, help="the shard holding this game hangs")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--shard-games", type=int, default=2, help="games per shard")
    parser.add_argument("--stall-timeout", type=float, default=2.0, help="seconds without a heartbeat")
    parser.add_argument("--log-level", choices=["debug", "info", "warning"], default="info")
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
