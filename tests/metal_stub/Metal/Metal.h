// Test-only stand-in for the Metal API csrc/metal/driver_apple.mm uses (see ../Foundation).
#pragma once
#import <Foundation/Foundation.h>

typedef struct {
  NSUInteger width, height, depth;
} MTLSize;
static inline MTLSize MTLSizeMake(NSUInteger w, NSUInteger h, NSUInteger d) {
  MTLSize s = {w, h, d};
  return s;
}
typedef enum : NSUInteger { MTLResourceStorageModeShared = 0 } MTLResourceOptions;
typedef enum : NSUInteger { MTLDispatchTypeSerial = 0, MTLDispatchTypeConcurrent = 1 } MTLDispatchType;
typedef enum : NSUInteger { MTLBarrierScopeBuffers = 1 } MTLBarrierScope;
typedef enum : NSUInteger { MTLCommandBufferStatusCompleted = 4, MTLCommandBufferStatusError = 5 } MTLCommandBufferStatus;

@protocol MTLFunction <NSObject>
@end
@protocol MTLBuffer <NSObject>
@end
@protocol MTLComputePipelineState <NSObject>
@property(readonly) NSUInteger maxTotalThreadsPerThreadgroup;
@end
@protocol MTLLibrary <NSObject>
- (id<MTLFunction>)newFunctionWithName:(NSString*)name;
@end
@protocol MTLComputeCommandEncoder <NSObject>
- (void)setComputePipelineState:(id<MTLComputePipelineState>)state;
- (void)setBytes:(const void*)bytes length:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)setBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset atIndex:(NSUInteger)index;
- (void)setThreadgroupMemoryLength:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)dispatchThreadgroups:(MTLSize)groups threadsPerThreadgroup:(MTLSize)threads;
- (void)memoryBarrierWithScope:(MTLBarrierScope)scope;
- (void)endEncoding;
@end
@protocol MTLCommandBuffer <NSObject>
- (id<MTLComputeCommandEncoder>)computeCommandEncoderWithDispatchType:(MTLDispatchType)type;
- (void)commit;
- (void)waitUntilCompleted;
@property(readonly) MTLCommandBufferStatus status;
@property(readonly) NSError* error;
@end
@protocol MTLCommandQueue <NSObject>
- (id<MTLCommandBuffer>)commandBuffer;
@end
@protocol MTLDevice <NSObject>
- (id<MTLCommandQueue>)newCommandQueue;
- (id<MTLLibrary>)newLibraryWithURL:(NSURL*)url error:(NSError**)error;
- (id<MTLComputePipelineState>)newComputePipelineStateWithFunction:(id<MTLFunction>)fn error:(NSError**)error;
- (id<MTLBuffer>)newBufferWithBytesNoCopy:(void*)pointer
                                   length:(NSUInteger)length
                                  options:(MTLResourceOptions)options
                              deallocator:(id)deallocator;
@end
#ifdef __cplusplus
extern "C"
#endif
id<MTLDevice> MTLCreateSystemDefaultDevice(void);
