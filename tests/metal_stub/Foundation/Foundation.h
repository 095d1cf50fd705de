// Test-only stand-in for the few Foundation declarations csrc/metal/driver_apple.mm uses, so
// Linux can syntax-check the driver (tests/test_metal_apple_driver.py). Signatures follow
// Apple's documentation by hand and can drift; only a macOS build proves the real headers.
#pragma once
#import <objc/objc.h>

typedef unsigned long NSUInteger;

@protocol NSObject
- (id)retain;
- (oneway void)release;
@end

@interface NSObject <NSObject> {
  Class isa;
}
@end

@interface NSString : NSObject
+ (instancetype)stringWithUTF8String:(const char*)s;
- (const char*)UTF8String;
@end

@interface NSError : NSObject
- (NSString*)localizedDescription;
@end

@interface NSURL : NSObject
+ (instancetype)fileURLWithPath:(NSString*)path;
@end
