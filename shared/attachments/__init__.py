"""What users send besides text: photos, stickers, voice notes and files, and what each gets (README "Attachments")."""
