"""The phone world: navrl's embedded, deterministic simulated phone and its tasks.

``sim`` (the simulator and its apps), ``templates`` (task families), ``task`` (TaskSpec),
``expert`` (the scripted expert), ``facts`` and ``judges`` (the oracle), ``suites``,
``synth`` (LLM-synthesised goal tasks), ``env`` (``navrl/PhoneWorld-v0``). Importing this
package registers its suites (``train``, ``val``, ``test-ios``, ``test-android``, ``test-unseen``,
``synth:PATH.json``), the ``oracle`` and ``oracle-best`` judges and its hooks; nothing heavy is imported until
a suite is used.
"""
from navrl.tasks.registry import World, register_judges, register_suite, register_suite_family, register_world
from navrl.worlds.phone.suite import PhoneSuite, SynthSuite, oracle_best_judges, oracle_judges

register_world(World("phone", "the embedded phone world (simulated apps, oracle judges)", hooks={
    "vocabulary": "navrl.worlds.phone.corpus:phone_world_vocabulary",
    "entity_words": "navrl.worlds.phone.corpus:entity_words",
    "corpus": "navrl.worlds.phone.corpus:corpus_and_labels",
    "synth": "navrl.worlds.phone.synth:synth_api",
    "breakdown": "navrl.worlds.phone.breakdown:breakdown_markdown",
}))
for _name in ("train", "val", "test-ios", "test-android", "test-unseen"):
    register_suite(PhoneSuite(_name))
register_suite_family("synth", SynthSuite, "synth:PATH.json")
register_judges("oracle", oracle_judges)
register_judges("oracle-best", oracle_best_judges)
