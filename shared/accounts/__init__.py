"""Who a user is across platforms: identity links, panel sign-in and sessions, export and import of one
user's data.
"""
