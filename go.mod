module github.com/gomogile/gomogile

go 1.26
