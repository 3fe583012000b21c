"""RL core: returns and advantages (advantages), the GiGPPO critic (gigppo), PPO and critic
losses (losses), the LM value head (value_head), the training config (config), the trainer
(trainer: one update, and ``Trainer.fit``, the outer loop) and fit's callbacks (callbacks)."""
