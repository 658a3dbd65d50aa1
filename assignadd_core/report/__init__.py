"""The book's side: the rule lock and what each rule reaches, the claims, wording, figures, the chapters'
helpers, the front page, the explorer's models and the book driver."""
