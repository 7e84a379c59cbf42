"""Follow-ups (issue 31): open threads noted from what users say is coming up, and the one check-in on each
after it has passed, with the user's consent, at a good local moment."""
