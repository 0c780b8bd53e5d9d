package storage_test

import (
	"fmt"

	"github.com/kplane/kplane/pkg/storage"
)

func ExampleEncodeContinue() {
	// A page of "/pods/default" ended at "/pods/default/nginx", read at revision 42.
	prefix := storage.KeyPrefix("/pods/default", true)
	token, err := storage.EncodeContinue("/pods/default/nginx\x00", prefix, 42)
	if err != nil {
		panic(err)
	}
	from, rev, err := storage.DecodeContinue(token, prefix)
	if err != nil {
		panic(err)
	}
	fmt.Printf("resume at %q in revision %d\n", from, rev)

	_, _, err = storage.DecodeContinue("not-a-token", prefix)
	fmt.Println(storage.HasCode(err, storage.ErrCodeInvalidContinue))
	// Output:
	// resume at "/pods/default/nginx\x00" in revision 42
	// true
}

func ExampleValidateKey() {
	for _, key := range []string{"/pods/default/nginx", "pods/default/nginx", "/pods/../secrets/x"} {
		fmt.Println(storage.ValidateKey(key))
	}
	// Output:
	// <nil>
	// invalid request, key: "pods/default/nginx": invalid key: must start with "/", as in /pods/default/nginx
	// invalid request, key: "/pods/../secrets/x": invalid key: ".." path segment
}
