"""Anytime-valid Hoeffding trees."""
