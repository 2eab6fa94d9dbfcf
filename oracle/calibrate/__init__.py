"""Private: calibration fitted on labels (``oracle calibrate``), per answering model and question
kind, out of fold, with evidence. The file it writes is public: ``oracle.config.calibration``.

``acalibrate(items, config, ...)`` runs the decision judge over labelled items and returns a
version 2 calibration file (``oracle.config.calibration.CalibrationFileV2``); ``oracle calibrate`` is the
command line face. scikit-learn (extra ``calibrate``) does the fitting.
"""

from oracle.calibrate.run import CalibrationRefused, acalibrate, reliability_png

__all__ = ["CalibrationRefused", "acalibrate", "reliability_png"]
