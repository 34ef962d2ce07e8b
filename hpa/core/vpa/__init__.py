"""The VPA recommendation model, pure like the rest of :mod:`hpa.core`.

Upstream counterpart: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1,
``pkg/recommender/util`` (histograms), ``pkg/recommender/model`` (samples, aggregate container
states, checkpoints), ``pkg/recommender/logic`` (estimators and the pod resource recommender) and
``pkg/utils/vpa/capping.go`` (policy capping). Time is an argument everywhere, as integer
nanoseconds since the Unix epoch (``*_ns``), so Go's ``time.Time`` arithmetic is reproduced
exactly.
"""
