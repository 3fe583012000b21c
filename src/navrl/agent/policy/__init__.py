"""Trainable planner policies: the tiny from-scratch transformer (CPU default) and the
Hugging Face (V)LM planner. Both implement :class:`navrl.agent.policy.base.Policy`."""
