"""The vertical autoscaler's control loops (``hpa vpa recommender``, ``hpa vpa updater``)."""
