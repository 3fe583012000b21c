"""App base class and the context apps use to read and change world state."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator

from navrl.worlds.phone.sim.widgets import Button, Dialog, Sheet, View

if TYPE_CHECKING:  # pragma: no cover
    from navrl.worlds.phone.sim.world import PhoneWorld


@dataclass(frozen=True)
class Variation:
    """Per-app content variation drawn once per world from the perturbation config."""
    shuffle: bool = False      # list orders shuffled
    filler: int = 0            # procedurally generated extra items
    layout: str = "default"    # "default" or "alt" (test-unseen layouts)
    seed: int = 0


def filler_names(rng: random.Random, draws: int, first: list[str], second: list[str],
                 taken: set[str]) -> Iterator[str]:
    """Names for filler items: ``draws`` draws of "<first> <second>"; a draw that is already
    in ``taken`` is skipped (not redrawn), a new one is added to it and yielded. Lazy: the
    caller's own draws for each item come between two name draws."""
    for _ in range(draws):
        name = f"{rng.choice(first)} {rng.choice(second)}"
        if name in taken:
            continue
        taken.add(name)
        yield name


class App:
    """A phone-world app. Subclasses are stateless: all state lives in ``ctx.data``.

    ``tabs``: (label, glyph, root screen) — the world draws the tab bar on root screens.
    ``root``: the root screen of an app without tabs.
    """

    name: str = ""
    color: str = "#888888"
    description: str = ""
    tabs: list[tuple[str, str, str]] = []
    root: str = "main"

    def init_data(self, rng: random.Random, var: Variation) -> dict:
        return {}

    def view(self, ctx: "Ctx", screen: str, params: dict) -> View:
        raise NotImplementedError

    def overlay(self, ctx: "Ctx", oid: str, params: dict) -> Dialog | Sheet | None:
        return None

    def root_screens(self) -> list[str]:
        return [t[2] for t in self.tabs] or [self.root]


class Ctx:
    """Handle given to an app's view and captured by its callbacks."""

    __slots__ = ("world", "app", "screen", "params")

    def __init__(self, world: "PhoneWorld", app: App, screen: str, params: dict):
        self.world, self.app, self.screen, self.params = world, app, screen, params

    # -- state -------------------------------------------------------------------------
    @property
    def data(self) -> dict:
        return self.world.state.data[self.app.name]

    def app_data(self, name: str) -> dict:
        return self.world.state.data[name]

    @property
    def skin(self):
        return self.world.skin

    @property
    def rng(self) -> random.Random:
        return self.world.state.rng

    @property
    def profile(self) -> dict:
        return self.world.state.profile

    def L(self, key: str) -> str:
        """Platform wording (``ctx.L("Add to cart")`` is "Add to Bag" on iOS)."""
        return self.world.skin.label(key)

    # -- navigation ----------------------------------------------------------------------
    def push(self, screen: str, /, **params: Any) -> None:
        self.world._push(self.app.name, screen, params)

    def pop(self) -> None:
        self.world._pop(self.app.name)

    def reset(self, screen: str, /, **params: Any) -> None:
        """Replace the whole stack (tab switch, or 'done' flows returning to a root)."""
        self.world._reset_stack(self.app.name, screen, params)

    def open_app(self, app: str, screen: str | None = None, /, **params: Any) -> None:
        self.world._open_app(app, screen, params)

    # -- text fields -----------------------------------------------------------------------
    def key(self, key: str, screen: str | None = None) -> str:
        return f"{self.app.name}/{screen or self.screen}/{key}"

    def field(self, key: str, screen: str | None = None) -> str:
        return self.world.state.fields.get(self.key(key, screen), "")

    def set_field(self, key: str, value: str, screen: str | None = None) -> None:
        self.world.state.fields[self.key(key, screen)] = value

    def opened(self, item: Any) -> None:
        """Note ``item`` as this app's most recently opened one (``data["recent"]``, oldest first)."""
        recent = self.data["recent"]
        if item in recent:
            recent.remove(item)
        recent.append(item)

    # -- overlays, messages, events ------------------------------------------------------------
    def show(self, oid: str, /, **params: Any) -> None:
        self.world.state.overlay = {"owner": self.app.name, "id": oid, "params": params}

    def dismiss(self) -> None:
        self.world.state.overlay = None

    def cancel_button(self) -> Button:
        """The platform's Cancel of a dialog or sheet: it closes the overlay."""
        return Button(self.L("Cancel"), self.dismiss, "plain")

    def delete_buttons(self, delete: Callable[[], None]) -> list[Button]:
        """A destructive Delete that runs ``delete``, then Cancel (a confirm dialog's or a row sheet's end)."""
        return [Button(self.L("Delete"), delete, "destructive"), self.cancel_button()]

    def toast(self, msg: str) -> None:
        self.world.state.toast = msg

    def emit(self, kind: str, **info: Any) -> None:
        """Record something that happened (mail sent, order placed): goal checks read these."""
        self.world.state.events.append({"app": self.app.name, "kind": kind, **info})
