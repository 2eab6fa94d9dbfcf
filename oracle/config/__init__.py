"""The one configuration object (``OracleConfig``) and its sections, read from a file, the
environment or Python. The model lives in ``oracle.config.model``; its file and environment readers
(``_file``, ``_env``) return plain data; calibration files are ``oracle.config.calibration``."""

from oracle.config.model import (DEFAULT_POLICY_WEIGHTS, LOCAL_BASE_URL, LOCAL_MODEL_ALIAS, SYSTEMONE_MODEL_ALIAS,
                                 ClaimCheckConfig, DecisionJudgeConfig, EscalationConfig, LLMJudgeConfig, OracleConfig,
                                 Price, ProvidersConfig, ProviderSettings, RoutingConfig, RubricsConfig, VerifierConfig,
                                 apply_env_overrides, is_loopback)

# Every public name of the module ``oracle.config`` was before it became this package.
__all__ = ["DEFAULT_POLICY_WEIGHTS", "LOCAL_BASE_URL", "LOCAL_MODEL_ALIAS", "SYSTEMONE_MODEL_ALIAS", "ClaimCheckConfig",
           "DecisionJudgeConfig", "EscalationConfig", "LLMJudgeConfig", "OracleConfig", "Price", "ProviderSettings",
           "ProvidersConfig", "RoutingConfig", "RubricsConfig", "VerifierConfig", "apply_env_overrides", "is_loopback"]
