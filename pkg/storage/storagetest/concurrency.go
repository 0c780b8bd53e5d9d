package storagetest

var concurrencyTests = []test{}
