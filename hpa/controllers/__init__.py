"""Controllers: fetch, decide (hpa.core), write. The horizontal controller and the vertical
recommender and updater.
"""
