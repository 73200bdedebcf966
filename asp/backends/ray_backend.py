"""The Ray backend: one Ray actor per slot, on any machine of a Ray cluster.

:class:`RayBackend` implements :class:`asp.backends.base.Backend` with Ray: each slot's worker
is an actor (``num_cpus=threads_per_worker``) that builds the model once; weights go to Ray's
object store once per publication (``ray.put``) and a shard carries the reference, so an actor
reloads only on a new publication. Shard results are ObjectRefs, awaited in completion order
on the event loop. The actor is threaded: while one thread plays a shard, another answers
progress, cancel and stack requests. A dead or stalled actor is killed (``ray.kill``) and
replaced; only its shard runs again. An actor that dies between shards is found before it is
given one (a pending call that never answers while it lives; for an actor on this machine, its
pid), so its death costs no shard a retry.

A private instance (``address=None``) lives in a temporary directory of its own, with a
watchdog process (:mod:`asp.backends.ray_reaper`) that kills whatever of it is left and
removes the directory when the instance is shut down or its owner dies, SIGKILL included.
It must have the CPUs that ``workers * threads_per_worker`` asks for: :meth:`RayBackend.start`
refuses at once when it has fewer (a connected cluster may grow, so there it is a warning).

Ray ships ``play_fn``, its cfg and the network class by value where they are not importable
(cloudpickle), so the spawn import checks of the local backend do not apply here; the nodes
need ``asp`` (and whatever play_fn imports) installed.

Nothing here is decorated with ``@ray.remote``: the actors' body,
:class:`~asp.backends.ray_actor.ShardRunner`, is a plain class that :meth:`RayBackend.start`
turns into an actor class.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ray
import ray.exceptions
import structlog
import torch
from torch import nn

from asp import progress, worker
from asp.backends import tempdirs
from asp.backends.base import SlotState, StartFailures, WorkerLost, retrieve
from asp.backends.ray_actor import ShardRunner
from asp.backends.ray_reaper import Reaper
from asp.checks import check_rebuildable
from asp.errors import AspError, ConfigError
from asp.log import log_settings
from asp.weights import Publications, WeightRef

__all__ = ["ObjectStoreWeights", "RayBackend", "ShardRunner"]

log = structlog.get_logger("asp.ray")

_POLL = 0.25  # seconds between progress requests to an actor running a shard
_ANSWER = 2.0  # seconds an actor has to answer a stack request
_GONE = 10.0  # seconds to wait for a killed actor to be reported dead


class ObjectStoreWeights(Publications):
    """Publishes weights into Ray's object store (``ray.put``), once per change."""

    def _put(self, name: str, state: dict[str, torch.Tensor]) -> Any:
        return ray.put(state)

    def _drop(self, location: Any) -> None:
        pass  # the object is freed once no shard names it any more


@dataclass
class _Actor:
    handle: Any
    number: int
    started: asyncio.Future[tuple[int, str]]
    vigil: asyncio.Future[None]
    """A call that never answers while the actor lives (:meth:`ShardRunner.vigil`)."""
    start_began: float = field(default_factory=time.monotonic)
    announced: bool = False
    killed: bool = False
    token: int | None = None
    """The run in flight, if any."""
    state: SlotState = SlotState(progress.IDLE, 0, None)
    polled: float = 0.0
    poll: asyncio.Future[tuple[int | None, int, int, int, int, int]] | None = None
    death: str | None = None
    """Set once a request found the actor dead."""

    @property
    def pid(self) -> int | None:
        fut = self.started
        if fut.done() and not fut.cancelled() and fut.exception() is None:
            return fut.result()[0]
        return None

    @property
    def ready(self) -> bool:
        fut = self.started
        return fut.done() and not fut.cancelled() and fut.exception() is None and not self.killed


class RayBackend:
    """Slots as Ray actors; see the module docstring."""

    name = "ray"

    def __init__(self, *, workers: int, threads_per_worker: int, start_timeout: float, address: str | None) -> None:
        self.workers = workers
        self.threads_per_worker = threads_per_worker
        self.start_timeout = start_timeout
        self.address = address
        self.actors: list[_Actor | None] = [None] * workers
        self._failed_starts = StartFailures(workers)
        self._numbers = 0
        self._tokens = 0
        self._owns_ray = False
        self._init: asyncio.Future[None] | None = None
        self._init_done = threading.Event()
        self._tmp: Path | None = None
        self._reaper: Reaper | None = None
        self._node: str | None = None
        self._actor_class: Any = None
        self._weights: ObjectStoreWeights | None = None

    # -- life cycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        began = time.perf_counter()
        if not ray.is_initialized():
            self._owns_ray = True
            self._init = asyncio.get_running_loop().run_in_executor(None, self._init_ray)
            # Shielded: a cancelled start cannot stop ray.init in its thread; close() waits for it
            # and then shuts the instance down.
            await asyncio.shield(self._init)
        self._node = ray.get_runtime_context().get_node_id()
        self._weights = ObjectStoreWeights()
        self._check_cpus()
        self._actor_class = ray.remote(ShardRunner)
        actors = [self._spawn(slot) for slot in range(self.workers)]
        try:
            async with asyncio.timeout(self.start_timeout):
                await asyncio.gather(*(a.started for a in actors))
        except (TimeoutError, ray.exceptions.RayError) as e:
            raise AspError(
                f"the Ray actors could not start: {e!r} ({self._cpus_wanted()} CPUs asked for; "
                f"cluster resources: {_resources(total=True)}, free: {_resources()})"
            ) from e
        for actor in actors:
            actor.announced = True
        log.info(
            "pool_started",
            backend="ray",
            workers=self.workers,
            pids=[a.pid for a in actors],
            nodes=sorted({a.started.result()[1] for a in actors}),
            seconds=round(time.perf_counter() - began, 3),
        )

    def _init_ray(self) -> None:
        try:
            private: dict[str, Any] = {}
            if self.address is None:
                self._tmp = tempdirs.owned_dir("ray-")
                self._reaper = Reaper(self._tmp)
                private["_temp_dir"] = str(self._tmp)  # what the reaper knows the instance by
            ray.init(
                address=self.address,
                include_dashboard=False,
                configure_logging=False,
                log_to_driver=True,
                **private,
            )
        except ConnectionError as e:
            raise AspError(f"could not connect to Ray at address={self.address!r}: {e}") from e
        finally:
            self._init_done.set()
        if self.address is None:
            log.info("ray_started", directory=str(self._tmp), reaper=self._reaper.pid if self._reaper else None)
        else:
            log.info("ray_connected", address=self.address)

    def _cpus_wanted(self) -> int:
        return self.workers * self.threads_per_worker

    def _check_cpus(self) -> None:
        """Refuse a private instance that has fewer CPUs than the actors need; warn for a cluster.

        :raises AspError: on a private instance with too few CPUs.
        """
        cpus = _resources(total=True).get("CPU", 0.0)
        wanted = self._cpus_wanted()
        if cpus >= wanted:
            return
        fields = {"cpus": cpus, "wanted": wanted, "workers": self.workers, "threads": self.threads_per_worker}
        if self._tmp is not None:  # nothing will add CPUs to a private instance: the actors would never start
            log.error("ray_cpus_short", **fields)
            raise AspError(
                f"the Ray backend asked for {wanted} CPUs ({self.workers} workers x {self.threads_per_worker} "
                f"threads_per_worker), and the private Ray instance has {cpus:g}: use fewer workers or threads"
            )
        log.warning("ray_cpus_short", **fields)  # an autoscaling cluster may still grow

    def _stop_ray(self) -> None:
        """Shut down the instance this backend started, end its reaper, remove its directory."""
        if self._owns_ray:
            self._owns_ray = False
            ray.shutdown()
        if self._reaper is not None:
            reaper, self._reaper = self._reaper, None
            if not reaper.close():
                log.warning("ray_reaper_still_running", pid=reaper.pid, directory=str(self._tmp))
        if self._tmp is not None:
            tempdirs.release(self._tmp)
            self._tmp = None

    async def close(self, *, grace: float) -> None:
        running = [a for a in self.actors if a is not None and not a.killed and a.token is not None]
        for actor in running:
            assert actor.token is not None
            actor.handle.cancel.remote(actor.token)
        deadline = time.monotonic() + grace
        while any(a.token is not None for a in running) and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.02)  # a run's token is cleared when its result comes back
        await asyncio.gather(
            *(self.kill(slot, "close") for slot, a in enumerate(self.actors) if a is not None and not a.killed)
        )
        if self._init is not None:
            await asyncio.wait([self._init])  # a cancelled start: ray.init may still be running
        await asyncio.to_thread(self._stop_ray)

    def kill_now(self, slot: int | None = None) -> None:
        for i, actor in enumerate(self.actors):
            if actor is not None and slot in (None, i) and not actor.killed:
                actor.killed = True
                actor.vigil.cancel()
                ray.kill(actor.handle, no_restart=True)
        if slot is None:
            if self._init is not None:
                self._init_done.wait(timeout=self.start_timeout)  # shutting down a half-made instance
            self._stop_ray()

    def check_network(self, net: nn.Module, role: str) -> None:
        check_rebuildable(net, role, importable=False)

    async def publish(self, role: str, net: nn.Module, version: int) -> WeightRef:
        assert self._weights is not None, "start() first"
        ref: WeightRef = await asyncio.to_thread(self._weights.publish, role, net, version=version, hold=True)
        return ref

    def release(self, ref: WeightRef) -> None:
        if self._weights is not None:
            self._weights.release(ref)

    def _warm(self) -> tuple[type[nn.Module], Any] | None:
        return self._weights.first_model if self._weights is not None else None

    # -- slots --------------------------------------------------------------------------------

    def pid(self, slot: int) -> int | None:
        actor = self.actors[slot]
        return actor.pid if actor is not None and not actor.killed else None

    def vacant(self) -> list[int]:
        return [slot for slot, a in enumerate(self.actors) if a is None or a.killed]

    def replace(self, slot: int) -> None:
        self._spawn(slot)

    def _spawn(self, slot: int) -> _Actor:
        self._numbers += 1
        handle = self._actor_class.options(
            num_cpus=self.threads_per_worker,
            max_concurrency=7,  # run, vigil, state, offer, cancel and stack at once
            scheduling_strategy="SPREAD",
            name=None,
        ).remote(self.threads_per_worker, self._warm(), log_settings())
        started: asyncio.Future[tuple[int, str]] = asyncio.ensure_future(_awaited(handle.ping.remote()))
        started.add_done_callback(retrieve)
        vigil: asyncio.Future[None] = asyncio.ensure_future(_awaited(handle.vigil.remote()))
        vigil.add_done_callback(retrieve)
        actor = _Actor(handle, self._numbers, started, vigil)
        self.actors[slot] = actor
        return actor

    def ready(self, slot: int) -> bool:
        actor = self.actors[slot]
        return actor is not None and actor.ready

    def starting(self) -> list[asyncio.Future[Any]]:
        return [a.started for a in self.actors if a is not None and not a.killed and not a.started.done()]

    async def check_starts(self) -> None:
        for slot, actor in enumerate(self.actors):
            if actor is not None and actor.ready and not actor.announced:
                actor.announced = True
                self._failed_starts.started(slot)
                pid, node = actor.started.result()
                seconds = round(time.monotonic() - actor.start_began, 3)
                log.info("worker_started", slot=slot, worker=actor.number, pid=pid, node=node, seconds=seconds)
            if actor is None or actor.killed or actor.ready:
                continue
            if actor.started.done():
                reason = repr(actor.started.exception())
            elif time.monotonic() - actor.start_began > self.start_timeout:
                reason = f"not started within start_timeout={self.start_timeout} s (cluster: {_resources()})"
            else:
                continue
            await self.kill(slot, "start_failed")
            self.actors[slot] = None
            self._failed_starts.failed(slot, reason, worker="Ray actor")

    async def idle_loss(self, slot: int) -> str | None:
        return self._death(self._actor(slot))

    def _death(self, actor: _Actor) -> str | None:
        """How the actor ended, once that is known; None while it may be alive."""
        if actor.death is None:
            if actor.vigil.done():
                actor.death = "killed" if actor.killed else "actor died"
            elif actor.pid is not None and actor.started.result()[1] == self._node and not _pid_alive(actor.pid):
                # On this machine the pid says so at once; Ray tells the vigil a moment later.
                actor.death = "actor died"
        return actor.death

    # -- shards -------------------------------------------------------------------------------

    def submit(self, slot: int, task: worker.ShardTask) -> asyncio.Future[worker.ShardOutput]:
        actor = self._actor(slot)
        death = self._death(actor)
        if death is not None:
            raise WorkerLost(
                f"Ray actor {actor.pid} died while idle", pid=actor.pid, exit=death, started_shard=False, cause=None
            )
        self._tokens += 1
        token = self._tokens
        try:
            ref = actor.handle.run.remote(token, task)
        except Exception as e:  # serialisation of the task
            raise ConfigError(f"shard {task.shard}'s task (play_fn, cfg) cannot be sent to Ray: {e!r}") from e
        actor.token, actor.state, actor.polled = token, SlotState(progress.IDLE, 0, None), 0.0
        outcome = asyncio.ensure_future(self._outcome(actor, token, ref))
        outcome.add_done_callback(retrieve)
        return outcome

    async def _outcome(self, actor: _Actor, token: int, ref: Any) -> worker.ShardOutput:
        try:
            out: worker.ShardOutput = await ref
            return out
        except ray.exceptions.RayTaskError as e:
            raise e.as_instanceof_cause() from None  # type: ignore[no-untyped-call]  # what play_fn raised, with the actor's traceback
        except ray.exceptions.RayActorError as e:
            actor.death = "actor died" if not actor.killed else "killed"
            began = actor.state.phase != progress.IDLE
            reason = f"Ray actor {actor.pid} died" + ("" if began else " before it started the shard")
            raise WorkerLost(reason, pid=actor.pid, exit=actor.death, started_shard=began, cause=str(e)) from e
        finally:
            if actor.token == token:
                actor.token = None

    async def states(self, slots: list[int]) -> dict[int, SlotState]:
        now = time.monotonic()
        answers: dict[int, SlotState] = {}
        for slot in slots:
            actor = self.actors[slot]
            if actor is None or actor.killed:
                continue
            poll = actor.poll
            if poll is not None and poll.done():
                actor.poll = None
                if not poll.cancelled() and poll.exception() is None:
                    token, phase, plies, pid, taken, asked = poll.result()
                    if token == actor.token:  # not an answer about an earlier run
                        actor.state = SlotState(phase, plies, pid or None, taken, asked)
                elif isinstance(poll.exception(), ray.exceptions.RayActorError):
                    actor.death = "actor died"
            if actor.poll is None and now - actor.polled >= _POLL:
                actor.polled = now
                actor.poll = asyncio.ensure_future(_awaited(actor.handle.state.remote()))
                actor.poll.add_done_callback(retrieve)
            answers[slot] = actor.state  # an actor that does not answer keeps its last state
        return answers

    def offer(self, slot: int, seq: int, first_game: int, n_games: int) -> None:
        actor = self._actor(slot)
        if actor.token is not None and not actor.killed:
            actor.handle.offer.remote(actor.token, seq, first_game, n_games)

    def cancel(self, slot: int) -> None:
        actor = self._actor(slot)
        if actor.token is not None and not actor.killed:
            actor.handle.cancel.remote(actor.token)

    async def stack(self, slot: int) -> str:
        try:
            async with asyncio.timeout(_ANSWER):
                text: str = await self._actor(slot).handle.stack.remote()
                return text
        except TimeoutError:
            return f"(the actor did not answer a stack request within {_ANSWER} s: it holds the GIL)"
        except ray.exceptions.RayError as e:
            return f"(no stack: {e!r})"

    async def kill(self, slot: int, reason: str) -> None:
        actor = self._actor(slot)
        already = actor.killed
        actor.killed = True
        actor.vigil.cancel()
        ray.kill(actor.handle, no_restart=True)
        try:  # a killed actor answers nothing more: wait until Ray says it is dead
            async with asyncio.timeout(_GONE):
                await actor.handle.ping.remote()
        except (TimeoutError, ray.exceptions.RayError):
            pass
        if not already:
            log.info("worker_killed", backend="ray", slot=slot, worker=actor.number, pid=actor.pid, reason=reason)

    def _actor(self, slot: int) -> _Actor:
        actor = self.actors[slot]
        assert actor is not None, f"slot {slot} has no actor"
        return actor


async def _awaited(ref: Any) -> Any:
    return await ref


def _pid_alive(pid: int) -> bool:
    """False once process ``pid`` of this machine has ended (a zombie has ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except FileNotFoundError:
        return False
    except (OSError, IndexError):  # no /proc (not Linux)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def _resources(*, total: bool = False) -> dict[str, float]:
    """The cluster's free resources (all of them with ``total``); empty if Ray cannot say."""
    try:
        if total:
            return dict(ray.cluster_resources())  # type: ignore[no-untyped-call]
        return dict(ray.available_resources())  # type: ignore[no-untyped-call]
    except Exception:  # noqa: BLE001 (a diagnostic only)
        return {}
