"""What an episode changed between a task's fresh world and its last one: the emails and
messages it sent, the notes it wrote. Templates' :meth:`~navrl.worlds.phone.task.Template.achieved`
(hindsight relabelling) name the goal an episode reached from these."""
from __future__ import annotations

from navrl.worlds.phone.sim import PhoneWorld


def sent_emails(start: PhoneWorld, end: PhoneWorld) -> list[dict]:
    """Mail's messages sent during the episode (``to``, ``subject``, ``body``), oldest first
    (Mail's sent list only grows)."""
    return list(end.state.data["Mail"]["sent"][len(start.state.data["Mail"]["sent"]):])


def sent_messages(start: PhoneWorld, end: PhoneWorld) -> list[tuple[str, str]]:
    """(to, text) of every message from me sent in Messages during the episode."""
    def mine(world: PhoneWorld) -> dict[str, list[str]]:
        return {t["with"]: [m["text"] for m in t["messages"] if m["from"] == "me"]
                for t in world.state.data["Messages"]["threads"]}
    before = mine(start)
    return [(to, text) for to, texts in mine(end).items() for text in texts[len(before.get(to, [])):]]


def new_notes(start: PhoneWorld, end: PhoneWorld) -> list[dict]:
    """Notes written during the episode (``title``, ``body``)."""
    old = {n["id"] for n in start.state.data["Notes"]["notes"]}
    return [n for n in end.state.data["Notes"]["notes"] if n["id"] not in old]
