import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Param,
  Post,
  Query,
  Res,
  StreamableFile,
  UploadedFile,
  UseInterceptors,
} from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import {
  ApiBody,
  ApiConsumes,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiProduces,
  ApiTags,
} from '@nestjs/swagger';
import type { Response } from 'express';
import { Principal } from '../access/principal';
import { ApiProblems } from '../common/openapi';
import { ListQueryDto, mapPage } from '../common/pagination';
import { RequirePermissions } from '../access/route-access.decorators';
import { FilePage, FileResponse, UploadFileDto, UploadFileForm } from './dto/file.dto';
import { contentDisposition } from './filename';
import { FilesService } from './files.service';
import type { StoredUpload } from './streaming-storage-engine';

@ApiTags('files')
@Controller('v1/files')
export class FilesController {
  constructor(private readonly files: FilesService) {}

  @Post()
  @RequirePermissions('files:create')
  @UseInterceptors(FileInterceptor('file'))
  @ApiOperation({ summary: 'Upload one file (multipart/form-data, field "file", optional "purpose")' })
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: UploadFileForm })
  @ApiCreatedResponse({ type: FileResponse })
  @ApiProblems(400, 413)
  async upload(
    @Principal() principal: Principal,
    @UploadedFile() upload: StoredUpload | undefined,
    @Body() dto: UploadFileDto,
  ): Promise<FileResponse> {
    return FileResponse.of(await this.files.record(principal, upload, dto.purpose));
  }

  @Get()
  @RequirePermissions('files:read')
  @ApiOperation({ summary: "List the organization's files, newest first" })
  @ApiOkResponse({ type: FilePage })
  @ApiProblems(400)
  async list(@Principal() principal: Principal, @Query() query: ListQueryDto): Promise<FilePage> {
    return mapPage(await this.files.list(principal, query), FileResponse.of);
  }

  @Get(':id')
  @RequirePermissions('files:read')
  @ApiOperation({ summary: 'Get a file record' })
  @ApiOkResponse({ type: FileResponse })
  @ApiProblems(404)
  async get(@Principal() principal: Principal, @Param('id') id: string): Promise<FileResponse> {
    return FileResponse.of(await this.files.get(principal, id));
  }

  @Get(':id/content')
  @RequirePermissions('files:read')
  @ApiOperation({ summary: 'Download the bytes, with the stored content type' })
  @ApiProduces('application/octet-stream')
  @ApiOkResponse({ schema: { type: 'string', format: 'binary' } })
  @ApiProblems(404)
  async content(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Res({ passthrough: true }) response: Response,
  ): Promise<StreamableFile> {
    const { file, content } = await this.files.open(principal, id);
    response.setHeader('Content-Type', file.contentType);
    response.setHeader('Content-Length', String(file.size));
    response.setHeader('Content-Disposition', contentDisposition(file.filename));
    response.setHeader('X-Content-Type-Options', 'nosniff');
    return new StreamableFile(content);
  }

  @Delete(':id')
  @HttpCode(204)
  @RequirePermissions('files:delete')
  @ApiOperation({ summary: 'Delete a file and its bytes' })
  @ApiNoContentResponse()
  @ApiProblems(404)
  async delete(@Principal() principal: Principal, @Param('id') id: string): Promise<void> {
    await this.files.delete(principal, id);
  }
}
