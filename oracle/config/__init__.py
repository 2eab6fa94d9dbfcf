"""The one configuration object (``OracleConfig``) and its sections, read from a file, the
environment or Python. The model lives in ``oracle.config.model``; its file and environment readers
(``_file``, ``_env``) return plain data; calibration files are ``oracle.config.calibration``."""

from oracle.config.model import (LOCAL_BASE_URL, LOCAL_MODEL_ALIAS, ClaimCheckConfig, DecisionJudgeConfig,
                                 EscalationConfig, LLMJudgeConfig, OracleConfig, Price, ProvidersConfig,
                                 ProviderSettings, RoutingConfig, RubricsConfig, VerifierConfig, is_loopback)

__all__ = ["LOCAL_BASE_URL", "LOCAL_MODEL_ALIAS", "ClaimCheckConfig", "DecisionJudgeConfig", "EscalationConfig",
           "LLMJudgeConfig", "OracleConfig", "Price", "ProviderSettings", "ProvidersConfig", "RoutingConfig",
           "RubricsConfig", "VerifierConfig", "is_loopback"]
