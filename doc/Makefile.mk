# Man pages and documents.
