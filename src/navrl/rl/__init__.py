"""RL core: returns and advantages (advantages), the GiGPPO critic (gigppo), PPO and critic
losses (losses), the LM value head (value_head) and the training config (config)."""
