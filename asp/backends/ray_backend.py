"""The Ray backend: one Ray actor per slot, on any machine of a Ray cluster.

:class:`RayBackend` implements :class:`asp.backends.base.Backend` with Ray, on the slots of
:class:`~asp.backends.slots.SlotBackend`: each slot's worker is an actor
(``num_cpus=threads_per_worker``) that builds the model once; weights go to Ray's object store
once per publication (``ray.put``) and a shard carries the reference, so an actor reloads only
on a new publication. Shard results are ObjectRefs, awaited in completion order
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
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ray
import ray.exceptions
import torch
from torch import nn

from asp import progress
from asp.backends import tempdirs, worker
from asp.backends.base import SlotState, WorkerLost, retrieve
from asp.backends.ray_actor import ShardRunner
from asp.backends.ray_reaper import Reaper
from asp.backends.slots import SlotBackend, SlotWorker, process_ended
from asp.backends.weights import Publications
from asp.errors import AspError, ConfigError
from asp.util.log import log_settings

__all__ = ["ObjectStoreWeights", "RayActor", "RayBackend", "ShardRunner"]

_POLL = 0.25  # seconds between progress requests to an actor running a shard
_ANSWER = 2.0  # seconds an actor has to answer a stack request
_GONE = 10.0  # seconds to wait for a killed actor to be reported dead


class ObjectStoreWeights(Publications):
    """Publishes weights into Ray's object store (``ray.put``), once per change."""

    def _put(self, name: str, state: dict[str, torch.Tensor]) -> Any:
        return ray.put(state)

    def _drop(self, location: Any) -> None:
        pass  # the object is freed once no shard names it any more


class RayActor(SlotWorker):
    """One slot's Ray actor: its handle, its vigil, and the run it has in flight."""

    def __init__(
        self, handle: Any, number: int, started: asyncio.Future[tuple[int, str]], vigil: asyncio.Future[None]
    ) -> None:
        super().__init__(number, started)
        self.started: asyncio.Future[tuple[int, str]] = started
        self.handle = handle
        self.vigil = vigil
        """A call that never answers while the actor lives (:meth:`ShardRunner.vigil`)."""
        vigil.add_done_callback(retrieve)
        self.token: int | None = None
        """The run in flight, if any."""
        self.state = SlotState(progress.IDLE, 0, None)
        self.polled = 0.0
        self.poll: asyncio.Future[tuple[int | None, int, int, int, int, int]] | None = None
        self.death: str | None = None
        """Set once a request found the actor dead."""

    @property
    def pid(self) -> int | None:
        return self.started.result()[0] if self.has_started else None

    @property
    def node(self) -> str:
        return self.started.result()[1] if self.has_started else ""

    def kill_now(self) -> None:
        if not self.killed:
            self._kill()

    async def kill(self) -> None:
        self._kill()
        try:  # a killed actor answers nothing more: wait until Ray says it is dead
            async with asyncio.timeout(_GONE):
                await self.handle.ping.remote()
        except (TimeoutError, ray.exceptions.RayError):
            pass

    def _kill(self) -> None:
        self.killed = True
        self.vigil.cancel()
        ray.kill(self.handle, no_restart=True)


class RayBackend(SlotBackend[RayActor]):
    """Slots as Ray actors; see the module docstring."""

    name = "ray"
    worker_kind = "Ray actor"
    rebuilds_importable_networks = False  # Ray ships the network's class by value
    start_errors = (ray.exceptions.RayError,)

    def __init__(self, *, workers: int, threads_per_worker: int, start_timeout: float, address: str | None) -> None:
        super().__init__(workers=workers, threads_per_worker=threads_per_worker, start_timeout=start_timeout)
        self.address = address
        self._tokens = 0
        self._owns_ray = False
        self._init: asyncio.Future[None] | None = None
        self._init_done = threading.Event()
        self._tmp: Path | None = None
        self._reaper: Reaper | None = None
        self._node: str | None = None
        self._actor_class: Any = None

    # -- life cycle ---------------------------------------------------------------------------

    async def _prepare(self) -> Publications:
        if not ray.is_initialized():
            self._owns_ray = True
            self._init = asyncio.get_running_loop().run_in_executor(None, self._init_ray)
            # Shielded: a cancelled start cannot stop ray.init in its thread; close() waits for it
            # and then shuts the instance down.
            await asyncio.shield(self._init)
        self._node = ray.get_runtime_context().get_node_id()
        self._check_cpus()
        self._actor_class = ray.remote(ShardRunner)
        return ObjectStoreWeights()

    def _new_worker(self, slot: int, number: int, warm: tuple[type[nn.Module], Any] | None) -> RayActor:
        handle = self._actor_class.options(
            num_cpus=self.threads_per_worker,
            max_concurrency=7,  # run, vigil, state, offer, cancel and stack at once
            scheduling_strategy="SPREAD",
            name=None,
        ).remote(self.threads_per_worker, warm, log_settings())
        started: asyncio.Future[tuple[int, str]] = asyncio.ensure_future(_awaited(handle.ping.remote()))
        vigil: asyncio.Future[None] = asyncio.ensure_future(_awaited(handle.vigil.remote()))
        return RayActor(handle, number, started, vigil)

    def _start_help(self) -> str:
        return (
            f" ({self._cpus_wanted()} CPUs asked for; cluster resources: {_resources(total=True)}, "
            f"free: {_resources()})"
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
            self.log.info("ray_started", directory=str(self._tmp), reaper=self._reaper.pid if self._reaper else None)
        else:
            self.log.info("ray_connected", address=self.address)

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
            self.log.error("ray_cpus_short", **fields)
            raise AspError(
                f"the Ray backend asked for {wanted} CPUs ({self.workers} workers x {self.threads_per_worker} "
                f"threads_per_worker), and the private Ray instance has {cpus:g}: use fewer workers or threads"
            )
        self.log.warning("ray_cpus_short", **fields)  # an autoscaling cluster may still grow

    def _stop_ray(self) -> None:
        """Shut down the instance this backend started, end its reaper, remove its directory."""
        if self._owns_ray:
            self._owns_ray = False
            ray.shutdown()
        if self._reaper is not None:
            reaper, self._reaper = self._reaper, None
            if not reaper.close():
                self.log.warning("ray_reaper_still_running", pid=reaper.pid, directory=str(self._tmp))
        if self._tmp is not None:
            tempdirs.release(self._tmp)
            self._tmp = None

    async def close(self, *, grace: float) -> None:
        running = [a for a in self.slots if a is not None and not a.killed and a.token is not None]
        for actor in running:
            assert actor.token is not None
            actor.handle.cancel.remote(actor.token)
        deadline = time.monotonic() + grace
        while any(a.token is not None for a in running) and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.02)  # a run's token is cleared when its result comes back
        await asyncio.gather(
            *(self.kill(slot, "close") for slot, a in enumerate(self.slots) if a is not None and not a.killed)
        )
        if self._init is not None:
            await asyncio.wait([self._init])  # a cancelled start: ray.init may still be running
        await asyncio.to_thread(self._stop_ray)

    def _let_go(self) -> None:
        if self._init is not None:
            self._init_done.wait(timeout=self.start_timeout)  # shutting down a half-made instance
        self._stop_ray()

    # -- shards -------------------------------------------------------------------------------

    async def idle_loss(self, slot: int) -> str | None:
        return self._death(self._worker(slot))

    def _death(self, actor: RayActor) -> str | None:
        """How the actor ended, once that is known; None while it may be alive."""
        if actor.death is None:
            if actor.vigil.done():
                actor.death = "killed" if actor.killed else "actor died"
            elif actor.pid is not None and actor.node == self._node and process_ended(actor.pid):
                # On this machine the pid says so at once; Ray tells the vigil a moment later.
                actor.death = "actor died"
        return actor.death

    def submit(
        self, slot: int, task: worker.ShardTask, offers: Sequence[tuple[int, int]] = ()
    ) -> asyncio.Future[worker.ShardOutput]:
        actor = self._worker(slot)
        death = self._death(actor)
        if death is not None:
            raise WorkerLost(
                f"Ray actor {actor.pid} died while idle", pid=actor.pid, exit=death, started_shard=False, cause=None
            )
        self._tokens += 1
        token = self._tokens
        try:
            ref = actor.handle.run.remote(token, task, list(offers))
        except Exception as e:  # serialisation of the task
            raise ConfigError(f"shard {task.shard}'s task (play_fn, cfg) cannot be sent to Ray: {e!r}") from e
        actor.token, actor.state, actor.polled = token, SlotState(progress.IDLE, 0, None), 0.0
        outcome = asyncio.ensure_future(self._outcome(actor, token, ref))
        outcome.add_done_callback(retrieve)
        return outcome

    async def _outcome(self, actor: RayActor, token: int, ref: Any) -> worker.ShardOutput:
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
            actor = self.slots[slot]
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
        actor = self._worker(slot)
        if actor.token is not None and not actor.killed:
            actor.handle.offer.remote(actor.token, seq, first_game, n_games)

    def cancel(self, slot: int) -> None:
        actor = self._worker(slot)
        if actor.token is not None and not actor.killed:
            actor.handle.cancel.remote(actor.token)

    async def stack(self, slot: int) -> str:
        try:
            async with asyncio.timeout(_ANSWER):
                text: str = await self._worker(slot).handle.stack.remote()
                return text
        except TimeoutError:
            return f"(the actor did not answer a stack request within {_ANSWER} s: it holds the GIL)"
        except ray.exceptions.RayError as e:
            return f"(no stack: {e!r})"


async def _awaited(ref: Any) -> Any:
    return await ref


def _resources(*, total: bool = False) -> dict[str, float]:
    """The cluster's free resources (all of them with ``total``); empty if Ray cannot say."""
    try:
        if total:
            return dict(ray.cluster_resources())  # type: ignore[no-untyped-call]
        return dict(ray.available_resources())  # type: ignore[no-untyped-call]
    except Exception:  # noqa: BLE001 (a diagnostic only)
        return {}
