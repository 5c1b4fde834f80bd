"""The support-desk domain of the seeds: a fake store backend, stand-in policies, scenarios."""
